package clock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.got = append(r.got, s)
	r.mu.Unlock()
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func TestVirtualOrder(t *testing.T) {
	v := NewVirtual(0, nil)
	defer v.Close()
	if !v.Now().Equal(Epoch) {
		t.Fatalf("starts at %v, want %v", v.Now(), Epoch)
	}
	var r recorder
	stamp := func(name string) func() {
		return func() { r.add(name + "@" + v.Now().Sub(Epoch).String()) }
	}
	// Scheduled from one event so that all are set before any fires.
	v.AfterFunc(0, func() {
		v.AfterFunc(20*time.Millisecond, stamp("c"))
		v.AfterFunc(10*time.Millisecond, stamp("a"))
		v.AfterFunc(10*time.Millisecond, stamp("b")) // same instant: set later, fires later
		stopped := v.AfterFunc(5*time.Millisecond, stamp("never"))
		if !stopped.Stop() || stopped.Stop() {
			t.Error("Stop: want true then false")
		}
		moved := v.AfterFunc(time.Millisecond, stamp("moved"))
		if !moved.Reset(30 * time.Millisecond) {
			t.Error("Reset of a pending timer reported not pending")
		}
		v.Wake(stamp("wake")) // wakes run before any later timer
	})
	Sleep(context.Background(), v, time.Second)
	want := []string{"wake@0s", "a@10ms", "b@10ms", "c@20ms", "moved@30ms"}
	got := r.list()
	if len(got) != len(want) {
		t.Fatalf("events %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v; want %v", got, want)
		}
	}
	if v.Elapsed() != time.Second {
		t.Errorf("elapsed %v after sleeping 1s", v.Elapsed())
	}
}

func TestVirtualStall(t *testing.T) {
	stalled := make(chan struct{})
	v := NewVirtual(10*time.Millisecond, func() { close(stalled) })
	defer v.Close()
	// The timer fires at once in wall time (virtual time jumps); after it
	// nothing remains, and the stall is reported at its instant.
	v.AfterFunc(time.Minute, func() {})
	select {
	case <-stalled:
	case <-time.After(5 * time.Second):
		t.Fatal("no stall reported")
	}
	if v.Elapsed() != time.Minute {
		t.Errorf("stalled at %v, want 1m", v.Elapsed())
	}
}

func TestSleepCanceled(t *testing.T) {
	v := NewVirtual(0, nil)
	defer v.Close()
	ctx, cancel := context.WithCancel(context.Background())
	v.AfterFunc(time.Second, cancel)
	if Sleep(ctx, v, time.Hour) {
		t.Error("Sleep finished despite the cancel")
	}
	if v.Elapsed() != time.Second {
		t.Errorf("canceled at %v, want 1s", v.Elapsed())
	}
}

func TestCloseIdempotent(t *testing.T) {
	v := NewVirtual(0, nil)
	fired := false
	v.AfterFunc(time.Hour, func() { fired = true })
	v.Close()
	v.Close()
	v.Wake(func() { fired = true })
	if fired {
		t.Error("an event ran after Close")
	}
}

// A busy loop is reported also when OnBusy comes after the scheduler has
// begun waiting for the process to settle: here the loop spins before
// OnBusy is called, as a run that starts at once after NewVirtual does on
// a loaded machine (the scheduler's first wait began without a limit and
// never ended).
func TestOnBusyAfterTheWaitBegan(t *testing.T) {
	v := NewVirtual(time.Second, nil)
	var stop atomic.Bool
	spun := make(chan struct{})
	go func() {
		close(spun)
		for !stop.Load() { // a busy loop, as a run that polls Now
		}
	}()
	<-spun
	time.Sleep(50 * time.Millisecond) // the scheduler waits for the spinning to end
	busy := make(chan struct{}, 1)
	v.OnBusy(100*time.Millisecond, func() {
		select {
		case busy <- struct{}{}:
		default:
		}
	})
	select {
	case <-busy:
	case <-time.After(10 * time.Second):
		t.Error("OnBusy's function was not called within 10 s of a busy loop")
	}
	stop.Store(true)
	v.Close()
}

// The scheduler waits for the process to settle after an event that may
// have readied a goroutine, and only then: a chain of quiet timers runs
// without a wait between its events, a chain of ordinary ones (or of
// quiet ones that stir) waits before each.
func TestQuietEventsSkipTheWait(t *testing.T) {
	const chain = 50
	waits := func(arm func(v *Virtual, f func()) Timer, stir bool) uint64 {
		v := NewVirtual(0, nil)
		defer v.Close()
		done := make(chan struct{})
		left := chain
		// The timer may fire before arm returns to this goroutine: the
		// callback takes it from a channel, not from a shared variable.
		armed := make(chan Timer, 1)
		var tm Timer
		armed <- arm(v, func() {
			if tm == nil {
				tm = <-armed
			}
			if stir {
				v.Stir()
			}
			if left--; left == 0 {
				close(done)
				return
			}
			tm.Reset(time.Millisecond)
		})
		<-done
		return v.waits.Load()
	}
	quiet := func(v *Virtual, f func()) Timer { return v.AfterFuncQuiet(time.Millisecond, f) }
	plain := func(v *Virtual, f func()) Timer { return v.AfterFunc(time.Millisecond, f) }
	// The first event waits (nothing is known of the process yet), and
	// so may a second one if the test's goroutine was still running.
	if w := waits(quiet, false); w > 2 {
		t.Errorf("%d quiet events: the scheduler waited %d times; want at most 2", chain, w)
	}
	if w := waits(quiet, true); w < chain {
		t.Errorf("%d quiet events that stir: the scheduler waited %d times; want %d or more", chain, w, chain)
	}
	if w := waits(plain, false); w < chain {
		t.Errorf("%d ordinary events: the scheduler waited %d times; want %d or more", chain, w, chain)
	}
}
