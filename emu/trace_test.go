package emu

import (
	"context"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/race"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// A trace-driven link is as deterministic as a fixed-rate one: twenty
// runs (fewer under the race detector) at GOMAXPROCS 1, 2 and 4 of three
// connections each way over a random-walk trace down and an on/off trace
// up, with loss, give one trace hash; another walk gives another.
func TestTraceDeterministic(t *testing.T) {
	up, err := link.OnOffTrace(8e6, 40*time.Millisecond, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	walk := func(seed uint64) *link.Trace {
		w, err := link.RandomWalkTrace(12e6, 0.3, 20*time.Millisecond, 2*time.Second, seed)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	trace := func(down *link.Trace) string {
		lc := link.Config{Delay: 10 * time.Millisecond, Loss: link.RandomLoss(0.01, 0), Qdisc: link.Qdisc{Limit: 40}}
		lc = lc.WithTrace(link.AtoB, up).WithTrace(link.BtoA, down)
		n := newNet(t, pairConfig(Config{Link: lc, Seed: 5}, tcpstack.Netemu, tcpstack.Netemu))
		res := exchange(t, n, 80, 3, 30<<10, 100<<10)
		checkExchange(t, res, 30<<10, 100<<10)
		st := n.Stats()
		n.Close()
		return st.TraceHash
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	want := ""
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for i := range race.DeterministicRuns(20) {
			if got := trace(walk(1)); want == "" {
				want = got
			} else if got != want {
				t.Fatalf("GOMAXPROCS %d, run %d: trace %s; want %s, the first run's", procs, i, got[:16], want[:16])
			}
		}
	}
	if other := trace(walk(2)); other == want {
		t.Errorf("another walk gave the same trace %s", want[:16])
	}
}

// An on/off trace's gaps show in a bulk transfer exactly: every data
// packet leaves the link at a whole millisecond of an on spell (off 30
// ms, then 12 Mbit/s for 70 ms, from the link's start), and every on
// millisecond the transfer keeps busy carries one.
func TestTraceOnOffGaps(t *testing.T) {
	tr, err := link.OnOffTrace(12e6, 70*time.Millisecond, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	lc := link.Config{Delay: 5 * time.Millisecond, Qdisc: link.Qdisc{Limit: 1000}}.WithTrace(link.BtoA, tr)
	n := newNet(t, pairConfig(Config{Link: lc}, tcpstack.Netemu, tcpstack.Netemu))
	var mu sync.Mutex
	var leave []time.Duration
	n.Observe(func(e link.Event) {
		if e.Kind == link.EventQueue && e.Dir == link.BtoA && len(e.Packet) > 1000 {
			mu.Lock()
			leave = append(leave, e.Finish)
			mu.Unlock()
		}
	})
	checkExchange(t, exchange(t, n, 80, 1, 0, 400<<10), 0, 400<<10)
	mu.Lock()
	defer mu.Unlock()
	if len(leave) < 250 {
		t.Fatalf("%d data packets; want the 400 KiB's", len(leave))
	}
	onMs := map[int64]bool{}
	for _, f := range leave {
		ms := int64(f / time.Millisecond)
		if f%time.Millisecond != 0 || ms%100 <= 30 && ms%100 != 0 {
			t.Fatalf("a data packet left at %v: not a whole millisecond of an on spell (31–100 of each 100 ms)", f)
		}
		if onMs[ms] {
			t.Fatalf("two 1500-byte packets left at %v: one opportunity carries one", f)
		}
		onMs[ms] = true
	}
	// Once the window is open, the link is never idle in an on spell.
	first, last := int64(leave[len(leave)/3]/time.Millisecond), int64(leave[len(leave)-2]/time.Millisecond)
	for ms := first; ms <= last; ms++ {
		if on := ms%100 > 30 || ms%100 == 0; on && !onMs[ms] {
			t.Errorf("the on millisecond %d ms carried no data packet", ms)
		}
	}
}

// The trace's hash covers every byte of every packet: two runs that send
// one byte differing in one bit, at the same instants and lengths, hash
// apart; the same byte twice hashes alike.
func TestTraceHashCoversPayload(t *testing.T) {
	trace := func(b byte) string {
		n := newNet(t, Config{Link: link.Config{Delay: 5 * time.Millisecond}, Seed: 1})
		err := n.Run(t.Context(), func(ctx context.Context) error {
			ln, err := n.Server().Listen(7)
			if err != nil {
				return err
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err == nil {
					io.Copy(c, c) // echoes until the client's FIN
					c.Close()
				}
			}()
			c, err := n.Client().Dial(ctx, n.Server().AddrPort(7))
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := c.Write([]byte{b}); err != nil {
				return err
			}
			echo := []byte{0}
			_, err = io.ReadFull(c, echo)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n.Stats().TraceHash
	}
	a, again, other := trace(0x40), trace(0x40), trace(0x41)
	if a != again {
		t.Errorf("the same run hashed %s, then %s", a, again)
	}
	if a == other {
		t.Errorf("a run whose one payload byte differs hashed alike, %s", a)
	}
}
