package link

import (
	"strings"
	"testing"
	"time"
)

func TestParseQdisc(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Qdisc
		out  string // String(); "" means in
	}{
		{"fifo", Qdisc{}, ""},
		{"codel", Qdisc{Kind: CoDel}, ""},
		{"fq_codel", Qdisc{Kind: FQCoDel}, ""},
		{"codel target 5ms interval 100ms limit 1000 ecn", Qdisc{Kind: CoDel, Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond, Limit: 1000, ECN: ECNOn}, ""},
		{"fq_codel flows 1024 quantum 1514 target 5ms interval 100ms limit 10240 memory_limit 32Mb ecn",
			Qdisc{Kind: FQCoDel, Flows: 1024, Quantum: 1514, Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond, Limit: 10240, MemoryLimit: 32 << 20, ECN: ECNOn}, ""},
		{"fq_codel noecn drop_batch 32 limit 0x100", Qdisc{Kind: FQCoDel, ECN: ECNOff, DropBatch: 32, Limit: 256}, "fq_codel limit 256 noecn drop_batch 32"},
		{"codel interval 1.5ms target 500us", Qdisc{Kind: CoDel, Interval: 1500 * time.Microsecond, Target: 500 * time.Microsecond}, "codel target 500us interval 1.5ms"},
		{"fq_codel memory_limit 4m", Qdisc{Kind: FQCoDel, MemoryLimit: 4 << 20}, "fq_codel memory_limit 4Mb"},
		{"fq_codel memory_limit 512kb", Qdisc{Kind: FQCoDel, MemoryLimit: 512 << 10}, "fq_codel memory_limit 512Kb"},
		{"fq_codel memory_limit 100000", Qdisc{Kind: FQCoDel, MemoryLimit: 100000}, ""},
		{"  codel   ecn ", Qdisc{Kind: CoDel, ECN: ECNOn}, "codel ecn"},
	} {
		got, err := ParseQdisc(c.in)
		if err != nil {
			t.Errorf("ParseQdisc(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseQdisc(%q) = %+v; want %+v", c.in, got, c.want)
		}
		out := c.out
		if out == "" {
			out = c.in
		}
		if s := got.String(); s != out {
			t.Errorf("ParseQdisc(%q).String() = %q; want %q", c.in, s, out)
		}
		if err := (Config{Rate: 1e6, Qdisc: got}).Validate(); err != nil {
			t.Errorf("%q: Validate: %v", c.in, err)
		}
	}
}

func TestParseQdiscErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "is empty"},
		{"sfq", `"sfq" is not one netemu has; want fifo, codel or fq_codel`},
		{"fifo limit 10", "fifo takes no options"},
		{"codel flows 10", `"flows" is not one of its options; want limit, target, interval, ecn, noecn`},
		{"codel target", "target needs a value, like target 5ms"},
		{"codel target 5", `target "5" has no unit`},
		{"codel target 0ms", "would be no time at all"},
		{"codel target 2min", `target "2min" is not a time`},
		{"codel interval 120s", "is over 1m0s"},
		{"codel limit -1", `limit "-1" is not a whole number`},
		{"codel limit 0", `limit "0" is out of range`},
		{"codel ecn noecn", "ecn is given twice"},
		{"codel limit 5 limit 6", "limit is given twice"},
		{"fq_codel quantum 100", `quantum "100" is out of range; want 256 to 1048576 bytes`},
		{"fq_codel flows 70000", `flows "70000" is out of range; want 1 to 65536`},
		{"fq_codel memory_limit lots", `memory_limit "lots" is not a size`},
		{"fq_codel memory_limit 4gb", "memory_limit \"4gb\" is out of range"},
		{"fq_codel ce_threshold 1ms", "ce_threshold is not supported"},
	} {
		_, err := ParseQdisc(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseQdisc(%q) = %v; want an error with %q", c.in, err, c.want)
		}
	}
}

func TestQdiscValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Qdisc: Qdisc{Kind: FIFO, Limit: 5}}, "FIFO, which has none"},
		{Config{Qdisc: Qdisc{Kind: CoDel, Flows: 5}}, "fq_codel's; codel has none"},
		{Config{Qdisc: Qdisc{Kind: 9}}, "Qdisc.Kind is 9"},
		{Config{Qdisc: Qdisc{Kind: CoDel}, QueuePackets: 100}, "bound the drop-tail FIFO only: bound codel with Qdisc.Limit"},
		{Config{BtoA: &Config{Qdisc: Qdisc{Kind: FQCoDel, Target: -1}}}, "BtoA.Qdisc.Target is -1ns"},
		{Config{Qdisc: Qdisc{Kind: FQCoDel, Quantum: 10}}, "Quantum is 10"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Validate() = %v; want an error with %q", c.cfg, err, c.want)
		}
	}
	// A link's own Config, defaults filled in, is valid again.
	l, err := New(Config{Rate: 1e6, Qdisc: Qdisc{Kind: CoDel}, BtoA: &Config{Rate: 1e6, Qdisc: Qdisc{Kind: FQCoDel}}}, newManualClock(), func(Dir, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Config().Validate(); err != nil {
		t.Errorf("the link's Config() does not validate: %v", err)
	}
}

// Per direction: BtoA may have its own qdisc.
func TestQdiscPerDirection(t *testing.T) {
	cfg := Config{Rate: 10e6, BtoA: &Config{Rate: 10e6, Qdisc: Qdisc{Kind: CoDel}}}
	l, err := New(cfg, newManualClock(), func(Dir, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	if l.dirs[AtoB].qd != nil {
		t.Error("a>b has a qdisc; want the FIFO")
	}
	if _, ok := l.dirs[BtoA].qd.(*codelQueue); !ok {
		t.Errorf("b>a has %T; want codel", l.dirs[BtoA].qd)
	}
}

func FuzzParseQdisc(f *testing.F) {
	for _, s := range []string{"fifo", "codel", "fq_codel", "codel target 5ms interval 100ms limit 1000 ecn",
		"fq_codel flows 1024 quantum 1514 target 5ms interval 100ms limit 10240 memory_limit 32Mb ecn", "fq_codel noecn drop_batch 0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQdisc(s)
		if err != nil {
			return
		}
		if err := (Config{Qdisc: q}).validateDirection(""); err != nil {
			t.Fatalf("ParseQdisc(%q) = %+v, which does not validate: %v", s, q, err)
		}
		back, err := ParseQdisc(q.String())
		if err != nil || back != q {
			t.Fatalf("ParseQdisc(%q) = %+v; its String %q reads back as %+v, %v", s, q, q.String(), back, err)
		}
	})
}

// Close counts the packets waiting in a qdisc as DropClosed, with those
// on the wire.
func TestCloseDropsQdiscPackets(t *testing.T) {
	for _, q := range []Qdisc{{Kind: CoDel}, {Kind: FQCoDel}} {
		r := newRig(t, Config{Rate: 1e6, Qdisc: q})
		r.at(0, func() {
			for i := range 5 {
				r.l.Send(AtoB, numbered(i, 1000))
			}
		})
		r.run(time.Millisecond)
		r.l.Close()
		r.run(time.Second)
		if st := r.l.Stats()[AtoB]; st.Drops[DropClosed] != 5 || len(r.arrivals()) != 0 {
			t.Errorf("%v: %d closed drops, %d delivered; want 5 and 0", q, st.Drops[DropClosed], len(r.arrivals()))
		}
	}
}
