package clock

import (
	"runtime"
	"testing"
	"testing/synctest"
)

// outsideCh is made outside any bubble.
var outsideCh = make(chan struct{})

// InBubble is true on every goroutine of a bubble and false outside;
// BubbleOthers counts the bubble's goroutines other than the caller and
// the bubble's own machinery.
func TestInBubble(t *testing.T) {
	if o, _, _ := BubbleOthers(); InBubble() || o != 0 {
		t.Errorf("outside a bubble: InBubble %v, BubbleOthers %d; want false, 0", InBubble(), o)
	}
	synctest.Test(t, func(t *testing.T) {
		if !InBubble() {
			t.Error("InBubble false in the bubble's test goroutine")
		}
		if n, _, _ := BubbleOthers(); n != 0 {
			t.Errorf("BubbleOthers %d with no goroutine started; want 0", n)
		}
		got := make(chan bool)
		stop := make(chan struct{})
		go func() { got <- InBubble(); <-stop }()
		if !<-got {
			t.Error("InBubble false on a goroutine the bubble started")
		}
		if n, stuck, _ := BubbleOthers(); n != 1 || stuck != 0 {
			t.Errorf("BubbleOthers %d, %d stuck, with one goroutine started and durably blocked; want 1, 0", n, stuck)
		}
		// A channel made outside the bubble blocks a goroutine of it, but
		// not durably.
		go func() { <-outsideCh }()
		for {
			if n, stuck, _ := BubbleOthers(); n == 2 && stuck == 1 {
				break
			}
			runtime.Gosched()
		}
		outsideCh <- struct{}{}
		close(stop)
		synctest.Wait()
		if n, _, _ := BubbleOthers(); n != 0 {
			t.Errorf("BubbleOthers %d after they ended; want 0", n)
		}
	})
	done := make(chan bool)
	go func() { done <- InBubble() }()
	if <-done {
		t.Error("InBubble true on a goroutine outside any bubble")
	}
}
