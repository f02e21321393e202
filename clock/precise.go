package clock

import (
	"container/heap"
	"runtime"
	"sort"
	"sync"
	"time"
)

// Precise is the wall clock with timers that fire on time. Go's timers
// wake up to a millisecond late (the runtime waits for events with
// millisecond timeouts); a link that bridges kernel traffic through
// userspace needs better. Precise runs its timers on one goroutine that
// sleeps on a Go timer until shortly before the earliest timer is due,
// then in short sleeps on the kernel's high-resolution timers, which a
// timer set meanwhile for an earlier instant ends (waker), then yields
// in a loop for the last microseconds. Callbacks run on that goroutine,
// one at a time, in due order; they must not block.
//
// It records how late each timer fired (Lateness). Close stops it.
type Precise struct {
	mu      sync.Mutex
	seq     uint64
	base    time.Time // timers' when counts from here
	timers  timerHeap
	closed  bool
	late    []time.Duration // lateness samples, bounded
	lateN   uint64
	lateSum time.Duration
	lateMax time.Duration

	kick chan struct{}
	exit chan struct{}
	// nap is the sleep through the last stretch before a timer; poke
	// ends it.
	nap waker
	// spin is how long before a timer is due the clock stops sleeping and
	// yields in a loop: spinWindow, or 0 on a real-time thread.
	spin time.Duration
}

// Phases of the wait for the next timer: a Go timer until coarseWindow
// before it is due, naps of at most nanoStep until spinWindow before it
// (a waker's sleep: a timer set meanwhile for an earlier instant ends
// the nap), then yielding.
const (
	coarseWindow = 1500 * time.Microsecond
	nanoStep     = 200 * time.Microsecond
	spinWindow   = 20 * time.Microsecond
)

const maxLateSamples = 1 << 16

// NewPrecise starts a precise clock.
func NewPrecise() *Precise {
	p := newPrecise(spinWindow)
	go p.loop()
	return p
}

func newPrecise(spin time.Duration) *Precise {
	return &Precise{base: time.Now(), kick: make(chan struct{}, 1), exit: make(chan struct{}), spin: spin}
}

// NewPreciseOn is NewPrecise with the clock's goroutine, which runs the
// timers' callbacks, locked to a thread of its own; setup runs first on
// that thread, and NewPreciseOn returns once it has. Where setup makes
// the thread a real-time one and reports true, the thread wakes on time
// from a sleep (the kernel gives a real-time thread no timer slack, and
// it preempts ordinary ones), so the clock sleeps until each timer is due
// instead of yielding through its last microseconds: a real-time thread
// that yields in a loop keeps every ordinary thread off its core. Where
// setup reports false (it changed nothing), the goroutine is unlocked
// and the clock runs as NewPrecise's does. Otherwise, once the clock is
// closed, undo (if not nil) runs on the thread before it ends: the
// runtime parks the process's main thread for good rather than ending
// it, so the thread must be left as it was found.
func NewPreciseOn(setup func() bool, undo func()) *Precise {
	ready := make(chan *Precise)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		spin := spinWindow
		if setup() {
			spin = 0
		} else {
			runtime.UnlockOSThread() // an ordinary goroutine, as NewPrecise's
			undo = nil
		}
		p := newPrecise(spin)
		ready <- p
		p.loop()
		if undo != nil {
			undo()
		}
	}()
	return <-ready
}

// Now returns time.Now().
func (p *Precise) Now() time.Time { return time.Now() }

// Since implements Monotonic: the monotonic clock alone, one clock read
// where Now().Sub reads the wall clock too.
func (p *Precise) Since(t time.Time) time.Duration { return time.Since(t) }

// Wake calls f at once.
func (p *Precise) Wake(f func()) { f() }

// AfterFunc calls f on the clock's goroutine once d has passed. A due
// time past the end of time (math.MaxInt64 after the clock's start) never
// comes.
func (p *Precise) AfterFunc(d time.Duration, f func()) Timer {
	t := &ptimer{p: p, timer: timer{f: f, index: -1}}
	t.Reset(d)
	return t
}

// Lateness summarizes how late timers fired: mean, 99th percentile (of
// up to the last 65536 timers), the latest of all (a stall the
// percentile hides), and how many fired.
func (p *Precise) Lateness() (mean, p99, most time.Duration, n uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lateN == 0 {
		return 0, 0, 0, 0
	}
	s := append([]time.Duration(nil), p.late...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return p.lateSum / time.Duration(p.lateN), s[len(s)*99/100], p.lateMax, p.lateN
}

// Close stops the clock; pending timers never fire. It is idempotent and
// waits for the clock's goroutine.
func (p *Precise) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.poke()
	}
	p.mu.Unlock()
	<-p.exit
}

func (p *Precise) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
	p.nap.wake()
}

func (p *Precise) loop() {
	defer close(p.exit)
	sleep := time.NewTimer(time.Hour)
	defer sleep.Stop()
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		// Timers at the end of time never fire: the heap holds nothing due.
		if len(p.timers) == 0 || p.timers[0].when == endOfTime {
			p.mu.Unlock()
			<-p.kick
			continue
		}
		t := p.timers[0]
		wait := t.when - time.Since(p.base)
		if wait > coarseWindow {
			p.mu.Unlock()
			sleep.Reset(wait - coarseWindow)
			select {
			case <-sleep.C:
			case <-p.kick:
				if !sleep.Stop() {
					select {
					case <-sleep.C:
					default:
					}
				}
			}
			continue
		}
		if wait > p.spin {
			tk := p.nap.ticket()
			p.mu.Unlock()
			p.nap.sleep(tk, min(wait-p.spin, nanoStep))
			continue
		}
		if wait > 0 {
			p.mu.Unlock()
			runtime.Gosched()
			continue
		}
		heap.Pop(&p.timers)
		late := -wait
		p.lateSum += late
		p.lateMax = max(p.lateMax, late)
		if len(p.late) < maxLateSamples {
			p.late = append(p.late, late)
		} else {
			p.late[p.lateN%maxLateSamples] = late
		}
		p.lateN++
		f := t.f
		p.mu.Unlock()
		f()
	}
}

type ptimer struct {
	p *Precise
	timer
}

func (t *ptimer) Stop() bool {
	p := t.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&p.timers, t.index)
	return true
}

func (t *ptimer) Reset(d time.Duration) bool {
	p := t.p
	p.mu.Lock()
	t.when = addSat(time.Since(p.base), max(d, 0))
	p.seq++
	t.seq = p.seq
	pending := t.index >= 0
	if pending {
		heap.Fix(&p.timers, t.index)
	} else if !p.closed {
		heap.Push(&p.timers, &t.timer)
	}
	first := p.timers.Len() > 0 && p.timers[0] == &t.timer
	p.mu.Unlock()
	if first {
		p.poke()
	}
	return pending
}
