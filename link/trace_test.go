package link

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func mustTrace(t *testing.T, text string) *Trace {
	t.Helper()
	tr, err := ParseTrace(strings.NewReader(text), "test")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// ms is n milliseconds.
func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// The one-line trace "1" is mm-link's 12 Mbit/s link: 1500-byte packets
// queued at once leave one a millisecond, from the first millisecond
// after they queued.
func TestTraceOneLineIs12Mbit(t *testing.T) {
	tr := mustTrace(t, "1\n")
	if tr.Period() != time.Millisecond || tr.Opportunities() != 1 || tr.MeanRate() != 12e6 {
		t.Fatalf("period %v, %d opportunities, %v bit/s; want 1ms, 1, 12e6", tr.Period(), tr.Opportunities(), tr.MeanRate())
	}
	l := traceLine{t: tr}
	for k := 1; k <= 1000; k++ {
		at, ok := l.depart(0, 1500, false)
		if !ok || at != ms(float64(k)) {
			t.Fatalf("packet %d leaves at %v (%v); want %v", k, at, ok, ms(float64(k)))
		}
	}
	// 1000 packets of 1500 bytes in one second: exactly 12 Mbit/s.
}

// Small packets share an opportunity's 1504 bytes, each costing its
// size and the 4-byte TUN header; the one that does not fit goes on
// into the next opportunity and leaves there.
func TestTraceByteAccounting(t *testing.T) {
	l := traceLine{t: mustTrace(t, "1\n")}
	for k := 1; k <= 300; k++ {
		at, _ := l.depart(0, 100, false)
		want := ms(float64((k*104 + 1503) / 1504)) // ceil(k·104 / 1504)
		if at != want {
			t.Fatalf("100-byte packet %d leaves at %v; want %v", k, at, want)
		}
	}
}

// An opportunity no queued packet can use is lost: a packet queued at
// or after an opportunity's millisecond cannot use it, nor the bytes
// the packet ahead of it left there.
func TestTraceUnusedOpportunitiesAreLost(t *testing.T) {
	l := traceLine{t: mustTrace(t, "1\n")}
	if at, _ := l.depart(0, 100, false); at != ms(1) {
		t.Fatalf("first packet at %v; want 1ms", at)
	}
	// Queued at 1 ms: the opportunity at 1 ms (with 1400 bytes left)
	// was spent before it queued.
	if at, _ := l.depart(ms(1), 100, false); at != ms(2) {
		t.Errorf("a packet queued at the opportunity's millisecond leaves at %v; want 2ms", at)
	}
	// Idle from 2 ms to 5.5 ms: opportunities 3, 4 and 5 are lost.
	if at, _ := l.depart(ms(5.5), 1500, false); at != ms(6) {
		t.Errorf("after an idle spell, at %v; want 6ms", at)
	}
	// Queued before the opportunity its predecessor finished in (6 ms,
	// 0 bytes left there): it waits for the next.
	if at, _ := l.depart(ms(5.7), 100, false); at != ms(7) {
		t.Errorf("behind a full opportunity, at %v; want 7ms", at)
	}
	// Queued before 7 ms, with 1400 bytes left there: it shares it.
	if at, _ := l.depart(ms(6.9), 1300, false); at != ms(7) {
		t.Errorf("sharing the leftover, at %v; want 7ms", at)
	}
}

// The trace repeats, its period ending at its last millisecond; a
// millisecond written twice is two opportunities; --once ends it.
func TestTraceWrapsAround(t *testing.T) {
	tr := mustTrace(t, "1\n3\n3\n")
	l := traceLine{t: tr}
	want := []float64{1, 3, 3, 4, 6, 6, 7, 9, 9, 10}
	for k, w := range want {
		if at, ok := l.depart(0, 1500, false); !ok || at != ms(w) {
			t.Fatalf("packet %d at %v (%v); want %vms", k+1, at, ok, w)
		}
	}
	// Far in the future, a whole number of periods on.
	if at, _ := l.depart(ms(3000.5), 1500, false); at != ms(3001) {
		t.Errorf("after 3 s idle, at %v; want 3001ms", at)
	}
	once := mustTrace(t, "1\n3\n3\n")
	once.Once = true
	lo := traceLine{t: once}
	for k, w := range want[:3] {
		if at, ok := lo.depart(0, 1500, false); !ok || at != ms(w) {
			t.Fatalf("once: packet %d at %v (%v); want %vms", k+1, at, ok, w)
		}
	}
	if at, ok := lo.depart(0, 1500, false); ok {
		t.Errorf("once: a fourth packet leaves at %v; want never", at)
	}
	if at, ok := (&traceLine{t: once}).depart(ms(5), 100, false); ok {
		t.Errorf("once: a packet queued after the trace leaves at %v; want never", at)
	}
}

// A line that is not one is refused with its number.
func TestTraceParseRefuses(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"", "trace test: no opportunity"},
		{"0\n0\n", "trace test:2: the trace lasts no time"},
		{"1\n\n2\n", "trace test:2: an empty line"},
		{"1\n2\nx\n", `trace test:3: "x" is not a whole number`},
		{"1\n-2\n", `trace test:2: "-2" is not a whole number`},
		{"1.5\n", `trace test:1: "1.5" is not a whole number`},
		{"5\n3\n", "trace test:2: 3 comes after 5"},
		{"1\n" + strings.Repeat("9", 100) + "\n", "trace test:2: a line too long"},
	} {
		_, err := ParseTrace(strings.NewReader(c.text), "test")
		var te *TraceError
		if !errors.As(err, &te) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v; want a TraceError starting %q", c.text, err, c.want)
		}
	}
	if tr, err := ParseTrace(strings.NewReader(" 1 \n2\n2"), "test"); err != nil || tr.Opportunities() != 3 {
		t.Errorf("spaces and no final newline: %v, %v; want 3 opportunities", tr, err)
	}
}

// A trace of a million lines is held in 4 bytes an opportunity (with
// the slice's growth while it is read).
func TestTraceMemoryBounded(t *testing.T) {
	var b bytes.Buffer
	for i := range 1_000_000 {
		fmt.Fprintf(&b, "%d\n", i/8+1)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr, err := ParseTrace(&b, "big")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("reading a million lines allocated %d MB; want at most 16", alloc>>20)
	}
	if tr.Opportunities() != 1_000_000 || tr.Period() != 125*time.Second {
		t.Errorf("%d opportunities over %v; want 1000000 over 125s", tr.Opportunities(), tr.Period())
	}
}

// Generated traces: a constant rate as mm-link's example writes it, an
// on/off trace's gap, steps, and a random walk the seed decides.
func TestTraceGenerators(t *testing.T) {
	text := func(tr *Trace) string {
		var b strings.Builder
		tr.WriteTo(&b)
		return b.String()
	}
	for _, c := range []struct {
		rate float64
		want string
	}{{12e6, "1\n"}, {24e6, "1\n1\n"}, {6e6, "2\n"}, {18e6, "1\n2\n2\n"}} {
		tr, err := ConstantTrace(c.rate)
		if err != nil {
			t.Fatal(err)
		}
		if text(tr) != c.want || tr.MeanRate() != c.rate {
			t.Errorf("ConstantTrace(%v) = %q (%v bit/s), %v; want %q", c.rate, text(tr), tr.MeanRate(), err, c.want)
		}
	}
	oo, err := OnOffTrace(12e6, 3*time.Millisecond, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if text(oo) != "3\n4\n5\n" {
		t.Errorf("OnOffTrace = %q, %v; want off 2 ms then one opportunity a millisecond for 3 ms", text(oo), err)
	}
	st, err := StepsTrace([]float64{12e6, 24e6}, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if text(st) != "1\n2\n3\n3\n4\n4\n" {
		t.Errorf("StepsTrace = %q, %v", text(st), err)
	}
	if _, err := StepsTrace([]float64{12e6, 0}, 2*time.Millisecond); err == nil || !strings.Contains(err.Error(), "end on a rate above 0") {
		t.Errorf("steps ending at rate 0: %v; want a refusal", err)
	}
	a, _ := RandomWalkTrace(10e6, 0.2, 100*time.Millisecond, 10*time.Second, 7)
	b, _ := RandomWalkTrace(10e6, 0.2, 100*time.Millisecond, 10*time.Second, 7)
	c, _ := RandomWalkTrace(10e6, 0.2, 100*time.Millisecond, 10*time.Second, 8)
	if text(a) != text(b) || text(a) == text(c) {
		t.Errorf("random walk: the same seed gave different traces, or another seed the same")
	}
	if m := a.MeanRate(); m < 10e6*0.99 || m > 10e6*1.01 || a.Period() <= 9900*time.Millisecond || a.Period() > 10*time.Second {
		t.Errorf("random walk: mean %v bit/s over %v; want 10 Mbit/s within 1%% (whole opportunities), over 10s less one opportunity's time", m, a.Period())
	}
	// The rate a timeline shows: 24 Mbit/s in the second step.
	if r := st.RateAt(4*time.Millisecond, 2*time.Millisecond); r != 24e6 {
		t.Errorf("RateAt the second step = %v; want 24e6", r)
	}
}

// Through the link: the trace "1" is the rate stage, so 1500-byte packets
// sent at once arrive one a millisecond after the delay, and 100-byte
// ones share opportunities by their bytes.
func TestTraceOnTheLink(t *testing.T) {
	for _, c := range []struct {
		size int
		want func(k int) time.Duration
	}{
		{1500, func(k int) time.Duration { return 10*time.Millisecond + ms(float64(k)) }},
		{100, func(k int) time.Duration { return 10*time.Millisecond + ms(float64((k*104+1503)/1504)) }},
	} {
		r := newRig(t, Config{Trace: mustTrace(t, "1\n"), Delay: 10 * time.Millisecond, Qdisc: Qdisc{Limit: 5000}})
		r.at(0, func() {
			for range 1000 {
				r.l.Send(AtoB, rawPkt(c.size))
			}
		})
		r.run(5 * time.Second)
		got := r.arrivals()
		if len(got) != 1000 {
			t.Fatalf("%d-byte packets: %d delivered; want 1000", c.size, len(got))
		}
		for k, a := range got {
			if a.at != c.want(k+1) {
				t.Fatalf("%d-byte packet %d arrived at %v; want %v", c.size, k+1, a.at, c.want(k+1))
			}
		}
	}
}

// A discipline that holds packets (codel) serves them at the
// opportunities, sharing leftover bytes as mm-link's queue does; a trace
// that does not repeat drops what waits when it ends.
func TestTraceBehindCoDelAndOnce(t *testing.T) {
	r := newRig(t, Config{Trace: mustTrace(t, "1\n"), Qdisc: Qdisc{Kind: CoDel}})
	r.at(0, func() {
		for range 30 {
			r.l.Send(AtoB, rawPkt(100))
		}
	})
	r.run(time.Second)
	got := r.arrivals()
	if len(got) != 30 || got[13].at != ms(1) || got[14].at != ms(2) || got[29].at != ms(3) {
		t.Fatalf("behind codel: %d delivered, the 14th at %v, the 15th at %v, the 30th at %v; want 30 at 1, 2 and 3 ms", len(got), got[13].at, got[14].at, got[29].at)
	}
	once := mustTrace(t, "1\n2\n")
	once.Once = true
	r = newRig(t, Config{Trace: once})
	r.at(0, func() {
		for range 5 {
			r.l.Send(AtoB, rawPkt(1500))
		}
	})
	r.run(time.Second)
	if n, d := len(r.arrivals()), r.l.Stats()[AtoB].Drops[DropTraceEnded]; n != 2 || d != 3 {
		t.Errorf("a trace of 2 opportunities, once: %d delivered, %d dropped at its end; want 2 and 3", n, d)
	}
	if err := (Config{Trace: once, Rate: 1e6}).Validate(); err == nil || !strings.Contains(err.Error(), "Trace and Rate") {
		t.Errorf("Trace and Rate both: %v; want a refusal", err)
	}
}
