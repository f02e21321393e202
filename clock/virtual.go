package clock

import (
	"container/heap"
	"errors"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Epoch is the instant at which every virtual clock starts. It is fixed so
// that timestamps (in captures, in HTTP headers a workload sets) are the same
// on every run. It is far above the zero time, which some stacks read as
// "unset".
var Epoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// ErrStalled is reported by a virtual clock whose run went idle with no
// timer pending and no wake queued: every goroutine of the run is blocked
// on something that no event will ever release.
var ErrStalled = errors.New("virtual clock stalled: every goroutine of the run is blocked and no timer is pending")

// stepMu serializes the steps of every virtual clock in the process. A step
// waits until the whole process is idle, then runs one event; with the lock,
// several virtual runs (parallel tests) take turns instead of each waiting
// forever for the others to go idle.
var stepMu sync.Mutex

// blockedInSyscall is how many goroutines the idle probe takes to be
// blocked in system calls for good (a reader of a terminal or a pipe,
// say); more than that means a system call in progress, which the run
// must wait for. It is the process's, learnt once for every run that
// follows, and only read or written under stepMu.
var blockedInSyscall uint64

// Virtual is a discrete-event clock. Time stands still while any goroutine
// of the process runs; once all are blocked, the scheduler runs the next
// event: first queued wakes in the order they were queued, then the earliest
// timer (timers due at the same instant fire in the order they were set).
// Only one event runs at a time and the run settles between events, so a
// run whose own goroutines do not race gives the same result every time.
// The wait for the run to settle is skipped after a quiet event
// (QuietTimers), which readied no goroutine: the process is as idle after
// it as it was before.
//
// Idleness is read from the Go runtime's scheduler metrics, so it is
// process-wide: unrelated busy goroutines delay a virtual run (they never
// corrupt it).
type Virtual struct {
	// now is the virtual time since Epoch. It changes only under mu, and
	// is read without it: Now is the clock's hottest call (both stacks
	// read it several times per packet).
	now atomic.Int64

	mu       sync.Mutex
	seq      uint64
	timers   timerHeap
	wakes    []func() // FIFO from wakeHead
	wakeHead int
	closed   bool
	events   uint64
	onStall  func()

	kick  chan struct{} // buffered(1): something was scheduled
	done  chan struct{} // closed by Close
	exit  chan struct{} // closed when the scheduler goroutine returns
	grace time.Duration

	busyLimit time.Duration // see OnBusy; guarded by mu
	onBusy    func()

	// inEvent is true while the scheduler runs an event. stirred is set
	// by Stir, and by a timer or wake set from outside an event (a
	// goroutine that was running, so the process may not be idle): either
	// makes the scheduler wait for the process to settle before the next
	// event.
	inEvent atomic.Bool
	stirred atomic.Bool
	waits   atomic.Uint64 // how many times the scheduler waited to settle
	checks  atomic.Uint64 // how many looks at the process those waits took
}

// OnBusy makes the scheduler call f when the process has not settled for
// limit of wall time: goroutines keep running, so time cannot advance (a
// loop polling Now, or work outside the run's clock). f is called once per
// such episode, from the scheduler's goroutine; it must not block.
func (v *Virtual) OnBusy(limit time.Duration, f func()) {
	v.mu.Lock()
	v.busyLimit, v.onBusy = limit, f
	v.mu.Unlock()
}

// busyHook returns what OnBusy set. The scheduler asks while it waits for
// the process to settle, not once before: OnBusy may come after the
// scheduler's first wait has begun (NewVirtual starts it), and a busy loop
// that starts then must still be reported.
func (v *Virtual) busyHook() (time.Duration, func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.busyLimit, v.onBusy
}

// NewVirtual starts a virtual clock at Epoch. stallGrace is how long (wall
// time) the scheduler waits with nothing to do before calling onStall; zero
// means one second. onStall may be nil. Close stops the scheduler.
func NewVirtual(stallGrace time.Duration, onStall func()) *Virtual {
	if stallGrace <= 0 {
		stallGrace = time.Second
	}
	v := &Virtual{
		onStall: onStall,
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		exit:    make(chan struct{}),
		grace:   stallGrace,
	}
	go v.loop()
	return v
}

// Now returns Epoch plus the virtual time elapsed.
func (v *Virtual) Now() time.Time {
	return Epoch.Add(time.Duration(v.now.Load()))
}

// Elapsed returns the virtual time since Epoch.
func (v *Virtual) Elapsed() time.Duration {
	return time.Duration(v.now.Load())
}

// Events returns how many events (timer calls and wakes) have run.
func (v *Virtual) Events() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.events
}

// AfterFunc schedules f at Now()+d, saturated at the end of time (a timer
// due then never fires). f runs on the scheduler's goroutine.
func (v *Virtual) AfterFunc(d time.Duration, f func()) Timer {
	t := &vtimer{v: v, timer: timer{f: f, index: -1}}
	t.Reset(d)
	return t
}

// AfterFuncQuiet is AfterFunc for a call that readies no goroutine itself
// (QuietTimers): the scheduler runs the next event after it without
// waiting for the process to settle, unless the call used Stir.
func (v *Virtual) AfterFuncQuiet(d time.Duration, f func()) Timer {
	t := &vtimer{v: v, timer: timer{f: f, index: -1, quiet: true}}
	t.Reset(d)
	return t
}

// Stir makes the scheduler wait for the process to settle after the event
// running now (QuietTimers).
func (v *Virtual) Stir() { v.stirred.Store(true) }

// outside notes a timer or wake set by a goroutine outside the events:
// the process may not be idle, so the next event waits for it to settle.
// It is called before the timer or wake becomes visible to the scheduler.
// A goroutine the scheduler never waited for (one woken by the wall clock
// or the network) that sets a timer while an event runs is not told from
// the event itself; a run fed from outside its clock is not deterministic
// anyway.
func (v *Virtual) outside() {
	if !v.inEvent.Load() {
		v.stirred.Store(true)
	}
}

// Wake queues f to run as the next event after the run settles.
func (v *Virtual) Wake(f func()) {
	v.outside()
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return
	}
	v.wakes = append(v.wakes, f)
	v.mu.Unlock()
	v.poke()
}

// Close stops the scheduler and waits for it. Pending timers never fire.
// Close is idempotent.
func (v *Virtual) Close() {
	v.mu.Lock()
	if !v.closed {
		v.closed = true
		close(v.done)
	}
	v.mu.Unlock()
	<-v.exit
}

func (v *Virtual) poke() {
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

func (v *Virtual) loop() {
	defer close(v.exit)
	idle := newIdleProbe()
	// settled is true when the process is known to be idle: the probe
	// said so, and every event since was quiet, unstirred, and no timer
	// or wake came from outside.
	settled := false
	for {
		stepMu.Lock()
		if !settled || v.stirred.Swap(false) {
			v.checks.Add(uint64(idle.wait(v.busyHook)))
			v.waits.Add(1)
			// A goroutine the wait saw running may have set timers;
			// it has settled now.
			v.stirred.Store(false)
		}
		f, quiet := v.next()
		if f != nil {
			v.inEvent.Store(true)
			f()
			v.inEvent.Store(false)
		}
		stepMu.Unlock()
		settled = quiet && !v.stirred.Swap(false)
		if f != nil {
			continue
		}
		v.mu.Lock()
		closed := v.closed
		v.mu.Unlock()
		if closed {
			return
		}
		// Nothing scheduled and nothing running: wait for someone outside
		// the event loop (the caller of Run, a real-time goroutine) to
		// schedule something, or report the stall.
		stall := time.NewTimer(v.grace)
		select {
		case <-v.kick:
		case <-v.done:
		case <-stall.C:
			if v.onStall != nil {
				v.onStall()
			}
			select {
			case <-v.kick:
			case <-v.done:
			}
		}
		stall.Stop()
	}
}

// next pops the next event, advancing time to it, and tells whether it is
// quiet (AfterFuncQuiet's). It returns nil when there is nothing to run or
// the clock is closed.
func (v *Virtual) next() (func(), bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil, false
	}
	if v.wakeHead < len(v.wakes) {
		f := v.wakes[v.wakeHead]
		v.wakes[v.wakeHead] = nil
		v.wakeHead++
		if v.wakeHead == len(v.wakes) {
			v.wakes, v.wakeHead = v.wakes[:0], 0
		}
		v.events++
		return f, false
	}
	// A timer at the end of time never fires: with only such timers left,
	// nothing is scheduled and the run is stalled.
	if len(v.timers) == 0 || v.timers[0].when == endOfTime {
		return nil, false
	}
	t := heap.Pop(&v.timers).(*timer)
	if t.when > time.Duration(v.now.Load()) {
		v.now.Store(int64(t.when))
	}
	v.events++
	return t.f, t.quiet
}

type vtimer struct {
	v *Virtual
	timer
}

func (t *vtimer) Stop() bool {
	t.v.outside()
	t.v.mu.Lock()
	defer t.v.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.v.timers, t.index)
	return true
}

func (t *vtimer) Reset(d time.Duration) bool {
	v := t.v
	v.outside()
	v.mu.Lock()
	t.when = addSat(time.Duration(v.now.Load()), max(d, 0))
	v.seq++
	t.seq = v.seq
	pending := t.index >= 0
	if pending {
		heap.Fix(&v.timers, t.index)
	} else if !v.closed {
		heap.Push(&v.timers, &t.timer)
	}
	v.mu.Unlock()
	v.poke()
	return pending
}

// idleProbe tells when no goroutine but the caller is running or runnable.
type idleProbe struct {
	samples []metrics.Sample
}

func newIdleProbe() *idleProbe {
	return &idleProbe{samples: []metrics.Sample{
		{Name: "/sched/goroutines/runnable:goroutines"},
		{Name: "/sched/goroutines/running:goroutines"},
		{Name: "/sched/goroutines/not-in-go:goroutines"},
	}}
}

// busyCheckEvery is how many of the idle probe's checks (each a yield or
// a nap of microseconds) pass between two looks at the busy limit.
const busyCheckEvery = 16

// syscallPatience is how many checks in a row (several milliseconds) a
// goroutine may stay in a system call, with nothing else running, before
// the probe takes it to be blocked there for good.
const syscallPatience = 200

// wait yields until the process has settled: nothing runnable, nothing
// running but the caller and nothing in a system call, seen twice in a
// row. If that takes longer than the limit hook returns (wall time,
// counted from the busyCheckEvery-th check), its function is called once;
// hook is asked every busyCheckEvery checks after that, so that a limit
// set while the wait runs counts too. A goroutine that stays in a system
// call for syscallPatience checks is taken to be blocked there for good
// and no longer holds back this run or any later one (blockedInSyscall).
// The caller holds stepMu.
//
// Yielding alone can starve a goroutine queued on another processor and
// holds a processor the run could use, so after a few busy yields the
// prober naps in nanosleep (a short time.Sleep can last until the
// runtime's next millisecond poll), then yields again (docs/PERFORMANCE.md).
// It returns how many checks it took.
func (p *idleProbe) wait(hook func() (time.Duration, func())) int {
	calm, busy, syscall := 0, 0, 0
	// The busy limit counts from the first look at it: most waits settle
	// sooner and never read the wall clock, which costs as much as a look
	// at the metrics where the clock source is a hypervisor's
	// (docs/PERFORMANCE.md).
	var start time.Time
	fired := false
	i := 0
	for calm < 2 {
		i++
		if !fired && i%busyCheckEvery == 0 {
			if start.IsZero() {
				start = time.Now()
			} else if limit, onBusy := hook(); onBusy != nil && limit > 0 && time.Since(start) > limit {
				onBusy()
				fired = true
			}
		}
		if busy > 8 {
			nap(20 * time.Microsecond)
			busy = 0
		} else {
			runtime.Gosched()
		}
		metrics.Read(p.samples)
		runnable, running, notInGo := p.samples[0].Value.Uint64(), p.samples[1].Value.Uint64(), p.samples[2].Value.Uint64()
		// A goroutine in a system call (writing a log line, say) is not
		// idle: when it returns it may act on the network. One that stays
		// there is taken to be blocked for good.
		blockedInSyscall = min(blockedInSyscall, notInGo)
		if notInGo > blockedInSyscall {
			if syscall++; syscall >= syscallPatience {
				blockedInSyscall, syscall = notInGo, 0
			}
		} else {
			syscall = 0
		}
		if runnable > 0 || running > 1 || notInGo > blockedInSyscall {
			calm = 0
			busy++
		} else {
			calm++
			busy = 0
		}
	}
	return i
}
