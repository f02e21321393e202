package mmlog

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
)

// A trace link's log as mm-link writes one: the header mahimahi's graph
// tools need, every line in time order, an opportunity line for each of
// the trace's opportunities up to the end, a departure per packet
// delivered with its delay from arrival, and a drop line per drop.
func TestLogOfATraceLink(t *testing.T) {
	tr, err := link.ParseTrace(strings.NewReader("1\n"), "12mbit.trace")
	if err != nil {
		t.Fatal(err)
	}
	cfg := link.Config{Trace: tr, Qdisc: link.Qdisc{Limit: 3}}
	clk := clock.NewVirtual(0, nil)
	defer clk.Close()
	var b strings.Builder
	m := New(&b, link.AtoB, cfg, "Uplink", "test")
	var mu sync.Mutex
	l, err := link.New(cfg, clk, func(link.Dir, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	l.Observe(func(e link.Event) { mu.Lock(); m.Observe(e); mu.Unlock() })
	pkt := make([]byte, 1500)
	pkt[0] = 0x45
	clk.AfterFunc(0, func() {
		for range 5 { // 3 queue, 2 dropped
			l.Send(link.AtoB, pkt)
		}
	})
	clk.AfterFunc(10*time.Millisecond, func() { l.Send(link.AtoB, pkt[:100]) })
	clock.Sleep(context.Background(), clk, time.Second)
	l.Close()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	var last int64
	count := map[string]int{}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			count["header"]++
			continue
		}
		f := strings.Fields(line)
		ts, _ := strconv.ParseInt(f[0], 10, 64)
		if ts < last {
			t.Fatalf("%q after time %d: out of order", line, last)
		}
		last = ts
		count[f[1]]++
		if f[1] == "-" {
			delay, _ := strconv.ParseInt(f[3], 10, 64)
			if delay < 0 || ts-delay < 0 {
				t.Errorf("%q: a departure before its arrival", line)
			}
		}
	}
	if !strings.Contains(b.String(), "# base timestamp: 0\n") || !strings.Contains(b.String(), "# queue: droptail [packets=3]\n") {
		t.Errorf("header:\n%s", b.String()[:200])
	}
	// Opportunities at 1, 2, … up to the last event (the 100-byte
	// packet's departure at 11 ms).
	want := map[string]int{"header": 5, "+": 6, "-": 4, "d": 2, "#": 11}
	for k, v := range want {
		if count[k] != v {
			t.Errorf("%d %q lines; want %d:\n%s", count[k], k, v, b.String())
		}
	}
}
