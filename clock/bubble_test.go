package clock

import (
	"testing"
	"testing/synctest"
)

// InBubble is true on every goroutine of a bubble and false outside;
// BubbleOthers counts the bubble's goroutines other than the caller and
// the bubble's own machinery.
func TestInBubble(t *testing.T) {
	if InBubble() || BubbleOthers() != 0 {
		t.Errorf("outside a bubble: InBubble %v, BubbleOthers %d; want false, 0", InBubble(), BubbleOthers())
	}
	synctest.Test(t, func(t *testing.T) {
		if !InBubble() {
			t.Error("InBubble false in the bubble's test goroutine")
		}
		if n := BubbleOthers(); n != 0 {
			t.Errorf("BubbleOthers %d with no goroutine started; want 0", n)
		}
		got := make(chan bool)
		stop := make(chan struct{})
		go func() { got <- InBubble(); <-stop }()
		if !<-got {
			t.Error("InBubble false on a goroutine the bubble started")
		}
		if n := BubbleOthers(); n != 1 {
			t.Errorf("BubbleOthers %d with one goroutine started; want 1", n)
		}
		close(stop)
		synctest.Wait()
		if n := BubbleOthers(); n != 0 {
			t.Errorf("BubbleOthers %d after it ended; want 0", n)
		}
	})
	done := make(chan bool)
	go func() { done <- InBubble() }()
	if <-done {
		t.Error("InBubble true on a goroutine outside any bubble")
	}
}
