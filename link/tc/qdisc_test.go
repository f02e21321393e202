package tc

import (
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

func TestParseQdisc(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Qdisc
		out  string // String(); "" means in
	}{
		{"fifo", Qdisc{}, ""},
		{"codel", Qdisc{Kind: link.CoDel}, ""},
		{"fq_codel", Qdisc{Kind: link.FQCoDel}, ""},
		{"codel target 5ms interval 100ms limit 1000 ecn", Qdisc{Kind: link.CoDel, Limit: 1000, Params: link.CoDelParams{Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond, ECN: link.ECNOn}}, ""},
		{"fq_codel flows 1024 quantum 1514 target 5ms interval 100ms limit 10240 memory_limit 32Mb ecn",
			Qdisc{Kind: link.FQCoDel, Limit: 10240, Params: link.FQCoDelParams{CoDelParams: link.CoDelParams{Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond, ECN: link.ECNOn},
				Flows: 1024, Quantum: 1514, MemoryLimit: 32 << 20}}, ""},
		{"fq_codel noecn drop_batch 32 limit 0x100", Qdisc{Kind: link.FQCoDel, Limit: 256, Params: link.FQCoDelParams{CoDelParams: link.CoDelParams{ECN: link.ECNOff}, DropBatch: 32}}, "fq_codel limit 256 noecn drop_batch 32"},
		{"codel interval 1.5ms target 500us", Qdisc{Kind: link.CoDel, Params: link.CoDelParams{Interval: 1500 * time.Microsecond, Target: 500 * time.Microsecond}}, "codel target 500us interval 1.5ms"},
		{"fq_codel memory_limit 4m", Qdisc{Kind: link.FQCoDel, Params: link.FQCoDelParams{MemoryLimit: 4 << 20}}, "fq_codel memory_limit 4Mb"},
		{"fq_codel memory_limit 512kb", Qdisc{Kind: link.FQCoDel, Params: link.FQCoDelParams{MemoryLimit: 512 << 10}}, "fq_codel memory_limit 512Kb"},
		{"fq_codel memory_limit 100000", Qdisc{Kind: link.FQCoDel, Params: link.FQCoDelParams{MemoryLimit: 100000}}, ""},
		{"  codel   ecn ", Qdisc{Kind: link.CoDel, Params: link.CoDelParams{ECN: link.ECNOn}}, "codel ecn"},
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
		if err := (link.Config{Rate: 1e6, Qdisc: link.Qdisc(got)}).Validate(); err != nil {
			t.Errorf("%q: Validate: %v", c.in, err)
		}
	}
}

func TestParseQdiscErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "is empty"},
		{"sfq", `"sfq" is not one netemu has; want fifo, pfifo, bfifo, codel, fq_codel`}, // and the kinds registered after
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
		if err := (link.Config{Qdisc: link.Qdisc(q)}).Validate(); err != nil {
			t.Fatalf("ParseQdisc(%q) = %+v, which does not validate: %v", s, q, err)
		}
		back, err := ParseQdisc(q.String())
		if err != nil || back != q {
			t.Fatalf("ParseQdisc(%q) = %+v; its String %q reads back as %+v, %v", s, q, q.String(), back, err)
		}
	})
}

// pfifo and bfifo are the FIFO with a limit of its own; pfifo_head_drop
// is read from the fields link registers for it.
func TestParseFIFOs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Qdisc
		out  string
	}{
		{"pfifo", Qdisc{}, "fifo"},
		{"pfifo limit 50", Qdisc{Limit: 50}, ""},
		{"bfifo limit 150000", Qdisc{LimitBytes: 150000}, ""},
		{"bfifo limit 100kb", Qdisc{LimitBytes: 100 << 10}, "bfifo limit 102400"},
		{"pfifo_head_drop", Qdisc{Kind: link.PFIFOHeadDrop}, ""},
		{"pfifo_head_drop limit 100", Qdisc{Kind: link.PFIFOHeadDrop, Limit: 100}, ""},
	} {
		got, err := ParseQdisc(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseQdisc(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		out := c.out
		if out == "" {
			out = c.in
		}
		if s := got.String(); s != out {
			t.Errorf("ParseQdisc(%q).String() = %q; want %q", c.in, s, out)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"pfifo limit", "qdisc pfifo: limit needs a value, like pfifo limit 1000"},
		{"pfifo limit 0", `qdisc pfifo: limit "0" is out of range; want 1 to 16777216, like limit 1000`},
		{"bfifo size 10", `qdisc bfifo: "size" is not one of its options; want limit`},
		{"bfifo limit lots", `qdisc bfifo: limit "lots" is not a size; write it like 32Mb, 512Kb or 1000000 (bytes)`},
		{"pfifo limit 5 ecn", `qdisc pfifo: "ecn" follows its limit; it takes limit only, like pfifo limit 1000`},
		{"pfifo_head_drop ecn", `qdisc pfifo_head_drop: "ecn" is not one of its options; want limit`},
	} {
		if _, err := ParseQdisc(c.in); err == nil || err.Error() != c.want {
			t.Errorf("ParseQdisc(%q) = %v; want %q", c.in, err, c.want)
		}
	}
}

// Apply puts a qdisc on a side; a bare fifo keeps a FIFO's limits.
func TestQdiscApply(t *testing.T) {
	base := link.Config{Rate: 1e6, Qdisc: link.Qdisc{Limit: 50}}
	if got := (Qdisc{}).Apply(base, Both); got.Qdisc.Limit != 50 {
		t.Errorf("fifo on a 50-packet FIFO: %+v", got.Qdisc)
	}
	got := Qdisc{Kind: link.CoDel}.Apply(base, Down)
	if got.Qdisc.Limit != 50 || got.BtoA == nil || got.BtoA.Qdisc != (link.Qdisc{Kind: link.CoDel}) || got.BtoA.Rate != 1e6 {
		t.Errorf("codel down: %+v, BtoA %+v", got.Qdisc, got.BtoA)
	}
}

// Every option every discipline registers reads and writes itself
// through ParseQdisc and String with no word of its own here: its
// example is taken, validates, and reads back the same.
func TestEveryQdiscOption(t *testing.T) {
	for k := link.FIFO + 1; k < k.Count(); k++ {
		for _, o := range k.Options() {
			lines := []string{k.String() + " " + example(o)}
			if o.Value == link.SwitchValue {
				lines = []string{k.String() + " " + o.Word, k.String() + " " + o.Off}
			}
			for _, s := range lines {
				q, err := ParseQdisc(s)
				if err != nil {
					t.Errorf("%s: ParseQdisc(%q): %v", k, s, err)
					continue
				}
				if o.Get(link.Qdisc(q)) == 0 {
					t.Errorf("ParseQdisc(%q) = %+v: %s is not set", s, q, o.Field)
				}
				if err := (link.Config{Qdisc: link.Qdisc(q)}).Validate(); err != nil {
					t.Errorf("ParseQdisc(%q): %v", s, err)
				}
				if back, err := ParseQdisc(q.String()); err != nil || back != q {
					t.Errorf("ParseQdisc(%q) = %+v writes %q, which reads back as %+v, %v", s, q, q.String(), back, err)
				}
			}
		}
	}
}
