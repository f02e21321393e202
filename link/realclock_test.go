package link

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"go.uber.org/goleak"
)

// On the real clock each direction delivers on a goroutine of the link's
// own: packets from one sender arrive in the order sent, with or without a
// delay, and Close waits for those goroutines.
func TestRealClockDeliversInOrderAndCloseWaits(t *testing.T) {
	defer goleak.VerifyNone(t)
	// The queue is big enough that nothing is dropped however the
	// goroutines are scheduled.
	// With a qdisc the 5000 packets take 4 ms to serialize, under CoDel's
	// target, so CoDel drops nothing either. The number is past the UDP
	// ports, so that fq_codel sees one flow.
	for _, cfg := range []Config{{}, {Delay: 200 * time.Microsecond}, {Rate: 1e9, Qdisc: Qdisc{Limit: 20000}},
		{Rate: 1e9, Qdisc: Qdisc{Kind: CoDel, Limit: 20000}}, {Rate: 1e9, Qdisc: Qdisc{Kind: FQCoDel}}} {
		const perDir = 5000
		var mu sync.Mutex
		next := [2]uint32{}
		bad := 0
		all := make(chan struct{})
		delivered := 0
		l, err := New(cfg, clock.Real{}, func(dir Dir, pkt []byte) {
			mu.Lock()
			defer mu.Unlock()
			if got := binary.BigEndian.Uint32(pkt[28:]); got != next[dir] {
				bad++
			}
			next[dir]++
			if delivered++; delivered == 2*perDir {
				close(all)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, dir := range []Dir{AtoB, BtoA} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pkt := rawPkt(100)
				for i := range uint32(perDir) {
					binary.BigEndian.PutUint32(pkt[28:], i)
					l.Send(dir, pkt)
				}
			}()
		}
		wg.Wait()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			t.Fatalf("%+v: %d of %d packets delivered; stats %+v", cfg, delivered, 2*perDir, l.Stats())
		}
		l.Close()
		l.Close()
		mu.Lock()
		if bad > 0 {
			t.Errorf("%+v: %d packets out of order", cfg, bad)
		}
		mu.Unlock()
	}
}

// Holds that overlap without end — the queue never empties during a bulk
// transfer — keep the hold queue's slice at a bounded size.
func TestHoldQueueStaysBounded(t *testing.T) {
	var q holdQueue
	var prev *flow
	for i := range 100000 {
		f := &flow{holding: true, gen: 1}
		q.push(holdSlot{f: f, gen: 1, deadline: time.Duration(i)})
		if prev != nil {
			prev.holding = false // superseded: stale until it reaches the head
		}
		prev = f
		if s := q.peek(); s == nil || s.f != f {
			t.Fatalf("step %d: peek did not return the live hold", i)
		}
	}
	if cap(q.slots) > 16 {
		t.Errorf("hold queue capacity %d after 100000 overlapping holds; want it bounded", cap(q.slots))
	}
}
