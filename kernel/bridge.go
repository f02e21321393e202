//go:build linux

package kernel

import (
	"fmt"

	"github.com/netemu/netemu/clock"
	"golang.org/x/sys/unix"
)

// bridgePriority is the real-time priority (SCHED_FIFO) of the thread
// that delivers the TUN bridge's packets: what `chrt -f 10` gives a whole
// process, above every ordinary thread and below the kernel's own
// real-time threads.
const bridgePriority = 10

// newBridgeClock starts the precise clock whose thread delivers the
// bridge's packets, made a real-time thread where this process may make
// one (root in the machine's first user namespace, or CAP_SYS_NICE): on a
// busy machine an ordinary thread wakes late, and the bridge spaces the
// kernel's packets and ACKs as the link did not (issue #47 measured a bulk
// run that took 7.3 s at load average 8 and 3.6 s under chrt). It returns
// the clock and what Facts says of its thread. Only the delivering thread
// is raised (in the mixed mode of tests, whose link delivers to an
// emulated host, that host's receive path runs on it too): the pumps that
// read the TUN devices stay ordinary goroutines, and the clock's thread
// never yields in a loop (NewPreciseOn).
func newBridgeClock() (*clock.Precise, string) {
	var priority string
	var was *unix.SchedAttr // the thread's scheduling before setup
	c := clock.NewPreciseOn(func() bool {
		var err error
		if was, err = unix.SchedGetAttr(0, 0); err != nil {
			priority = fmt.Sprintf("ordinary (its scheduling unreadable: %v)", err)
			return false
		}
		// Reset on fork: the threads the runtime starts from this one,
		// and any process, are ordinary.
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: bridgePriority, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			priority = fmt.Sprintf("ordinary (SCHED_FIFO refused: %v)", err)
			return false
		}
		priority = fmt.Sprintf("SCHED_FIFO %d", bridgePriority)
		return true
	}, func() {
		unix.SchedSetAttr(0, was, 0) // as it was before setup
	})
	return c, priority
}
