//go:build !linux

package clock

import (
	"sync"
	"time"
)

// A waker is a short sleep that another goroutine can end (see
// waker_linux.go); here on the runtime's timers, which may be coarser
// than Linux's.
type waker struct {
	mu  sync.Mutex
	seq uint32
	ch  chan struct{} // closed by wake; nil until a ticket is taken
}

func (w *waker) ticket() uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.seq
}

func (w *waker) sleep(t uint32, d time.Duration) {
	w.mu.Lock()
	ch, woken := w.ch, w.seq != t
	w.mu.Unlock()
	if woken {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ch:
	}
}

func (w *waker) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}
