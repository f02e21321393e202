package clock

import (
	"testing"
	"time"
)

// A wake ends a sleep under way, and one that comes after the sleep's
// ticket but before the sleep ends it before it begins: Precise's timer
// set for an earlier instant during its nap fires then, not when the
// nap would have ended. The sleeps here are 10 s long; each must end
// within 5 s (a bound that holds on a loaded machine).
func TestWakerEndsTheSleep(t *testing.T) {
	var w waker
	ended := make(chan time.Duration, 1)
	tk := w.ticket()
	go func() {
		start := time.Now()
		w.sleep(tk, 10*time.Second)
		ended <- time.Since(start)
	}()
	time.Sleep(20 * time.Millisecond) // most likely asleep by now; either way the wake must end it
	w.wake()
	select {
	case d := <-ended:
		t.Logf("a 10 s sleep woken after 20 ms lasted %v", d)
	case <-time.After(5 * time.Second):
		t.Fatal("a wake did not end a 10 s sleep within 5 s")
	}

	tk = w.ticket()
	w.wake()
	start := time.Now()
	w.sleep(tk, 10*time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a sleep woken before it began lasted %v; want it to end at once", d)
	}
}
