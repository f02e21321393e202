package clock

import (
	"container/heap"
	"sync"
	"testing/synctest"
	"time"
)

// Serial is the clock of a testing/synctest bubble: the time package's,
// which there is the bubble's fake one, with timers and wakes that run
// one at a time on one goroutine of its own, in the order they fall due,
// ties in the order they were set, as the virtual clock runs them. Go's
// own timers run each call on a goroutine of its own, so calls due at one
// instant race; in a bubble, where time stands still until every
// goroutine is blocked, many calls fall due at one instant (a delivery in
// each direction, a TCP timer on a tick of its wheel), and their order
// decides what the hosts send. Before each call, unless the bubble has
// just been found idle by the time moving on, Serial waits for every other
// goroutine of the bubble to block (synctest.Wait), so that what the call
// before readied has acted, as the virtual clock waits for its run to be
// idle between events. Serial makes a run the same every time.
//
// NewSerial must be called inside a bubble. Its goroutine blocks only on
// channels and timers made there, which are durable blocks. Close ends
// it.
type Serial struct {
	start time.Time

	mu     sync.Mutex
	timers timerHeap
	seq    uint64
	closed bool

	poke chan struct{} // a new head timer, or Close
	done chan struct{} // closed when the goroutine has ended
}

var (
	_ Clock     = (*Serial)(nil)
	_ Monotonic = (*Serial)(nil)
)

// NewSerial starts a Serial clock.
func NewSerial() *Serial {
	s := &Serial{start: time.Now(), poke: make(chan struct{}, 1), done: make(chan struct{})}
	go s.run()
	return s
}

// Now returns time.Now().
func (s *Serial) Now() time.Time { return time.Now() }

// Since implements Monotonic with time.Since.
func (s *Serial) Since(t time.Time) time.Duration { return time.Since(t) }

// Wake runs f on the clock's goroutine, as a call due now after those
// set before it: a goroutine it readies acts alone, before the next call.
func (s *Serial) Wake(f func()) { s.AfterFunc(0, f) }

// elapsed is the time since the clock's start, the scale of its timers.
func (s *Serial) elapsed() time.Duration { return time.Since(s.start) }

// AfterFunc arranges for f to run on the clock's goroutine once d has
// elapsed, after every call due earlier and those due at the same
// instant that were set before it.
func (s *Serial) AfterFunc(d time.Duration, f func()) Timer {
	t := &stimer{s: s, timer: timer{f: f, index: -1}}
	t.Reset(d)
	return t
}

// Close ends the clock's goroutine and waits for it; pending calls are
// dropped. It is idempotent.
func (s *Serial) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		for _, t := range s.timers {
			t.index = -1
		}
		s.timers = nil
		s.wake()
	}
	s.mu.Unlock()
	<-s.done
}

// wake readies the clock's goroutine to look at the head timer again.
func (s *Serial) wake() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// run calls the timers as they fall due, one at a time, each once the
// bubble is idle.
func (s *Serial) run() {
	defer close(s.done)
	var tm *time.Timer
	idle := false // every other goroutine has blocked since the last call
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		if len(s.timers) == 0 {
			s.mu.Unlock()
			<-s.poke
			idle = false
			continue
		}
		next := s.timers[0]
		if wait := next.when - s.elapsed(); wait > 0 {
			s.mu.Unlock()
			if tm == nil {
				tm = time.NewTimer(wait)
			} else {
				tm.Reset(wait)
			}
			select {
			case <-tm.C:
				idle = true // the bubble's time moves only when it is
			case <-s.poke:
				tm.Stop()
				idle = false
			}
			continue
		}
		if !idle {
			s.mu.Unlock()
			settle()
			idle = true
			continue // what the others did may have set an earlier call
		}
		heap.Pop(&s.timers)
		f := next.f
		s.mu.Unlock()
		f()
		idle = false
	}
}

// settle waits until every other goroutine of the bubble is durably
// blocked. synctest.Wait may be called by one goroutine at a time: while
// the test's own goroutine is in it, a nanosecond's sleep waits instead,
// for the same state a nanosecond of the bubble's time later.
func settle() {
	defer func() {
		if recover() != nil {
			time.Sleep(time.Nanosecond)
		}
	}()
	synctest.Wait()
}

type stimer struct {
	s *Serial
	timer
}

func (t *stimer) Stop() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.s.timers, t.index)
	return true
}

func (t *stimer) Reset(d time.Duration) bool {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	t.when = addSat(s.elapsed(), max(d, 0))
	s.seq++
	t.seq = s.seq
	pending := t.index >= 0
	switch {
	case pending:
		heap.Fix(&s.timers, t.index)
	case !s.closed:
		heap.Push(&s.timers, &t.timer)
	}
	if t.index == 0 {
		s.wake()
	}
	return pending
}
