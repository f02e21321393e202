package clock

import (
	"syscall"
	"testing"
	"time"
)

// NewPreciseOn's setup, its timers' callbacks and undo run on one thread,
// the clock's own, and undo runs once the clock is closed. A setup that
// changed nothing (false) has no undo.
func TestPreciseOnOneThread(t *testing.T) {
	var setupTid int
	undone := make(chan int, 1)
	p := NewPreciseOn(func() bool {
		setupTid = syscall.Gettid()
		return true
	}, func() { undone <- syscall.Gettid() })
	fired := make(chan int, 1)
	p.AfterFunc(time.Millisecond, func() { fired <- syscall.Gettid() })
	if tid := <-fired; tid != setupTid {
		t.Errorf("a timer fired on thread %d; want the clock's, %d", tid, setupTid)
	}
	select {
	case <-undone:
		t.Fatal("undo ran before Close")
	default:
	}
	p.Close()
	select {
	case tid := <-undone:
		if tid != setupTid {
			t.Errorf("undo ran on thread %d; want the clock's, %d", tid, setupTid)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("undo did not run within 5 s of Close")
	}
}

func TestPreciseOnRefusedHasNoUndo(t *testing.T) {
	undone := false
	p := NewPreciseOn(func() bool { return false }, func() { undone = true })
	fired := make(chan struct{})
	p.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
	p.Close()
	time.Sleep(10 * time.Millisecond) // the goroutine's end, after Close
	if undone {
		t.Error("undo ran after a setup that changed nothing")
	}
}
