package clock

import "time"

// timer is a pending call, as Virtual and Precise keep them: due at when
// (on the clock's own scale), ties broken by seq, the order in which
// timers were set. index is its place in a timerHeap, -1 when not pending.
// quiet marks a call that readies no goroutine itself (QuietTimers).
type timer struct {
	f     func()
	when  time.Duration
	seq   uint64
	index int
	quiet bool
}

// timerHeap orders timers by (when, seq); it implements heap.Interface.
type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].when != h[j].when {
		return h[i].when < h[j].when
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*h = old[:n-1]
	return t
}
