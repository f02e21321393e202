// Package clock is the one clock of an emulated run.
//
// Everything inside the emulated world reads time through a Clock: the
// link's timers, both TCP stacks, the workloads' stopwatches and the pcap
// timestamps. Nothing there calls time.Now, time.Sleep or time.AfterFunc
// directly; that is what makes virtual time possible.
//
// Three implementations exist:
//
//   - Virtual, a discrete-event scheduler. Its time starts at Epoch and
//     stands still while any goroutine of the process runs; once all are
//     blocked it runs the next event (queued wakes first, in order, then
//     the earliest timer; timers due at one instant fire in the order
//     they were set). Runs are fast and deterministic. A run that can
//     never progress (every goroutine blocked, nothing scheduled) is
//     reported through the stall callback (ErrStalled).
//   - Real, the wall clock, for talking to the outside world and for
//     checking that virtual and real runs agree.
//   - Precise, the wall clock with timers that fire on time, for links
//     that bridge kernel traffic.
//
// Sleep waits on any Clock; Signal hands a wakeup back to the scheduler
// (Wake) so that goroutines readied at one instant resume in a fixed
// order. A component with a faster or more faithful path for some clocks
// asks for the optional interfaces Sequential, SpawningTimers and
// Monotonic, never for a concrete clock type.
package clock
