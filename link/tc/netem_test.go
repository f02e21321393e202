package tc

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// pct is a percentage as ParseNetem stores it: the number typed, divided
// by 100 at run time (a constant 0.3/100 can differ in the last bit).
func pct(v float64) float64 { return v / 100 }

// parseNetem is ParseNetem as the tables read it: the values, and the
// options given by name.
func parseNetem(line string) (link.Config, []string, error) {
	n, err := ParseNetem(line)
	var given []string
	for _, o := range n.Options() {
		given = append(given, o.String())
	}
	return n.Config(), given, err
}

// netemConfig is c with ParseNetem's default limit when c sets none.
func netemConfig(c link.Config) link.Config {
	if c.Qdisc.Limit == 0 {
		c.Qdisc.Limit = link.DefaultQueuePackets
	}
	return c
}

// inTCOrder sorts option names as Netem.Options lists them.
func inTCOrder(names []string) []string {
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int {
		x, _ := optionNamed(a)
		y, _ := optionNamed(b)
		return int(x) - int(y)
	})
	return out
}

// netemCases are tc command lines, what follows "netem", with the link.Config
// and options tc would set from them (tc/q_netem.c, netem_parse_opt).
var netemCases = []struct {
	line  string
	want  link.Config
	given []string
}{
	{"", link.Config{}, nil},

	// delay TIME [JITTER [CORRELATION]] [distribution NAME]
	{"delay 100ms", link.Config{Delay: 100 * time.Millisecond}, []string{"delay"}},
	{"delay 100ms 10ms", link.Config{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond}, []string{"delay"}},
	{"delay 100ms 10ms 25%", link.Config{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, JitterCorr: pct(25)}, []string{"delay"}},
	{"delay 100ms 20ms distribution normal", link.Config{Delay: 100 * time.Millisecond, Jitter: 20 * time.Millisecond, Distribution: link.Normal}, []string{"delay", "distribution"}},
	{"delay 100ms 20ms distribution pareto", link.Config{Delay: 100 * time.Millisecond, Jitter: 20 * time.Millisecond, Distribution: link.Pareto}, []string{"delay", "distribution"}},
	{"delay 100ms 20ms distribution paretonormal", link.Config{Delay: 100 * time.Millisecond, Jitter: 20 * time.Millisecond, Distribution: link.ParetoNormal}, []string{"delay", "distribution"}},
	{"delay 100ms 20ms distribution uniform", link.Config{Delay: 100 * time.Millisecond, Jitter: 20 * time.Millisecond, Distribution: link.Uniform}, []string{"delay", "distribution"}},
	{"delay 100ms 20ms 25% distribution pareto", link.Config{Delay: 100 * time.Millisecond, Jitter: 20 * time.Millisecond, JitterCorr: pct(25), Distribution: link.Pareto}, []string{"delay", "distribution"}},
	{"distribution normal delay 100ms 20ms", link.Config{Delay: 100 * time.Millisecond, Jitter: 20 * time.Millisecond, Distribution: link.Normal}, []string{"distribution", "delay"}},
	// get_time64's units, any case, decimals and exponents; a bare 0.
	{"delay 1.5ms", link.Config{Delay: 1500 * time.Microsecond}, []string{"delay"}},
	{"delay 0.3ms", link.Config{Delay: 300 * time.Microsecond}, []string{"delay"}},
	{"delay 2s", link.Config{Delay: 2 * time.Second}, []string{"delay"}},
	{"delay 2sec", link.Config{Delay: 2 * time.Second}, []string{"delay"}},
	{"delay 2secs", link.Config{Delay: 2 * time.Second}, []string{"delay"}},
	{"delay 5msec", link.Config{Delay: 5 * time.Millisecond}, []string{"delay"}},
	{"delay 5msecs", link.Config{Delay: 5 * time.Millisecond}, []string{"delay"}},
	{"delay 100us", link.Config{Delay: 100 * time.Microsecond}, []string{"delay"}},
	{"delay 100usec", link.Config{Delay: 100 * time.Microsecond}, []string{"delay"}},
	{"delay 100usecs", link.Config{Delay: 100 * time.Microsecond}, []string{"delay"}},
	{"delay 300ns", link.Config{Delay: 300}, []string{"delay"}},
	{"delay 300nsec", link.Config{Delay: 300}, []string{"delay"}},
	{"delay 300nsecs", link.Config{Delay: 300}, []string{"delay"}},
	{"delay 25MS 5Ms", link.Config{Delay: 25 * time.Millisecond, Jitter: 5 * time.Millisecond}, []string{"delay"}},
	{"delay 1e3us", link.Config{Delay: time.Millisecond}, []string{"delay"}},
	{"delay 0x10ms", link.Config{Delay: 16 * time.Millisecond}, []string{"delay"}},
	{"delay 0", link.Config{}, []string{"delay"}},
	{"delay 0 10ms", link.Config{Jitter: 10 * time.Millisecond}, []string{"delay"}},
	{"delay 86400s", link.Config{Delay: 24 * time.Hour}, []string{"delay"}},

	// loss [random] PERCENT [CORRELATION] | state ... | gemodel ...
	{"loss 1%", link.Config{Loss: link.RandomLoss(pct(1), 0)}, []string{"loss"}},
	{"loss 1", link.Config{Loss: link.RandomLoss(pct(1), 0)}, []string{"loss"}},
	{"loss 0.3% 25%", link.Config{Loss: link.RandomLoss(pct(0.3), pct(25))}, []string{"loss"}},
	{"loss random 1%", link.Config{Loss: link.RandomLoss(pct(1), 0)}, []string{"loss"}},
	{"loss random 1% 25%", link.Config{Loss: link.RandomLoss(pct(1), pct(25))}, []string{"loss"}},
	{"loss random .5%", link.Config{Loss: link.RandomLoss(pct(0.5), 0)}, []string{"loss"}},
	{"loss 100%", link.Config{Loss: link.RandomLoss(1, 0)}, []string{"loss"}},
	{"loss 0%", link.Config{}, []string{"loss"}},
	// tc's defaults for a missing P31, P32, P23, P14: 1-P13, 0, 1, 0.
	{"loss state 1%", link.Config{Loss: link.Loss{Model: link.LossState, P13: pct(1), P31: 1 - pct(1), P23: 1}}, []string{"loss"}},
	{"loss state 1% 10%", link.Config{Loss: link.Loss{Model: link.LossState, P13: pct(1), P31: pct(10), P23: 1}}, []string{"loss"}},
	{"loss state 1% 10% 5% 20% 0.5%", link.Config{Loss: link.Loss{Model: link.LossState, P13: pct(1), P31: pct(10), P32: pct(5), P23: pct(20), P14: pct(0.5)}}, []string{"loss"}},
	{"loss state .5%", link.Config{Loss: link.Loss{Model: link.LossState, P13: pct(0.5), P31: 1 - pct(0.5), P23: 1}}, []string{"loss"}},
	// tc's defaults for a missing R, 1-H, 1-K: 1-P, 1, 0.
	{"loss gemodel 1%", link.Config{Loss: link.Loss{Model: link.LossGE, GoodToBad: pct(1), BadToGood: 1 - pct(1), BadLoss: 1}}, []string{"loss"}},
	{"loss gemodel 1% 10%", link.Config{Loss: link.Loss{Model: link.LossGE, GoodToBad: pct(1), BadToGood: pct(10), BadLoss: 1}}, []string{"loss"}},
	{"loss gemodel 1% 10% 70% 0.1%", link.Config{Loss: link.Loss{Model: link.LossGE, GoodToBad: pct(1), BadToGood: pct(10), BadLoss: pct(70), GoodLoss: pct(0.1)}}, []string{"loss"}},
	{"loss gemodel .5%", link.Config{Loss: link.Loss{Model: link.LossGE, GoodToBad: pct(0.5), BadToGood: 1 - pct(0.5), BadLoss: 1}}, []string{"loss"}},

	// duplicate, corrupt PERCENT [CORRELATION]
	{"duplicate 1%", link.Config{Duplicate: link.Chance{P: pct(1)}}, []string{"duplicate"}},
	{"duplicate 1% 25%", link.Config{Duplicate: link.Chance{P: pct(1), Corr: pct(25)}}, []string{"duplicate"}},
	{"corrupt 0.1%", link.Config{Corrupt: link.Chance{P: pct(0.1)}}, []string{"corrupt"}},
	{"corrupt 0.1% 25%", link.Config{Corrupt: link.Chance{P: pct(0.1), Corr: pct(25)}}, []string{"corrupt"}},

	// reorder PERCENT [CORRELATION] [gap DISTANCE]: gap 1 when not
	// given, as tc sets it; no reorder probability, no gap and no delay
	// needed.
	{"delay 10ms reorder 25%", link.Config{Delay: 10 * time.Millisecond, Reorder: link.Chance{P: pct(25)}, ReorderGap: 1}, []string{"delay", "reorder"}},
	{"reorder 25% 50% delay 10ms", link.Config{Delay: 10 * time.Millisecond, Reorder: link.Chance{P: pct(25), Corr: pct(50)}, ReorderGap: 1}, []string{"reorder", "delay"}},
	{"delay 10ms reorder 25% gap 5", link.Config{Delay: 10 * time.Millisecond, Reorder: link.Chance{P: pct(25)}, ReorderGap: 5}, []string{"delay", "reorder", "gap"}},
	{"delay 10ms reorder 25% 50% gap 5", link.Config{Delay: 10 * time.Millisecond, Reorder: link.Chance{P: pct(25), Corr: pct(50)}, ReorderGap: 5}, []string{"delay", "reorder", "gap"}},
	{"gap 5 delay 10ms reorder 25%", link.Config{Delay: 10 * time.Millisecond, Reorder: link.Chance{P: pct(25)}, ReorderGap: 5}, []string{"gap", "delay", "reorder"}},
	{"delay 10ms reorder 25% gap 010", link.Config{Delay: 10 * time.Millisecond, Reorder: link.Chance{P: pct(25)}, ReorderGap: 8}, []string{"delay", "reorder", "gap"}},
	{"delay 10ms reorder 25% gap 0x10", link.Config{Delay: 10 * time.Millisecond, Reorder: link.Chance{P: pct(25)}, ReorderGap: 16}, []string{"delay", "reorder", "gap"}},
	{"reorder 0%", link.Config{}, []string{"reorder"}},
	{"reorder 0% 50%", link.Config{Reorder: link.Chance{Corr: pct(50)}}, []string{"reorder"}},
	{"gap 0", link.Config{}, []string{"gap"}},

	// rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]
	{"rate 1mbit", link.Config{Rate: 1e6}, []string{"rate"}},
	{"rate 1Mbit", link.Config{Rate: 1e6}, []string{"rate"}},
	{"rate 1.5mbit", link.Config{Rate: 1.5e6}, []string{"rate"}},
	{"rate 1mbps", link.Config{Rate: 8e6}, []string{"rate"}},
	{"rate 0", link.Config{}, []string{"rate"}},
	{"rate 256kbit 20", link.Config{Rate: 256e3, PacketOverhead: 20}, []string{"rate"}},
	{"rate 256kbit -14", link.Config{Rate: 256e3, PacketOverhead: -14}, []string{"rate"}},
	{"rate 256kbit 20 100", link.Config{Rate: 256e3, PacketOverhead: 20, CellSize: 100}, []string{"rate"}},
	{"rate 256kbit 20 100 -4", link.Config{Rate: 256e3, PacketOverhead: 20, CellSize: 100, CellOverhead: -4}, []string{"rate"}},
	{"rate 256kbit 20 100 5", link.Config{Rate: 256e3, PacketOverhead: 20, CellSize: 100, CellOverhead: 5}, []string{"rate"}},
	// tc reads a cell overhead after a packet overhead even without a
	// cell size, and reads its numbers in C's notations.
	{"rate 256kbit 20 -4", link.Config{Rate: 256e3, PacketOverhead: 20, CellOverhead: -4}, []string{"rate"}},
	{"rate 256kbit 0x14 060 -0x5", link.Config{Rate: 256e3, PacketOverhead: 20, CellSize: 48, CellOverhead: -5}, []string{"rate"}},
	{"rate 256kbit -65535 48 65535", link.Config{Rate: 256e3, PacketOverhead: -65535, CellSize: 48, CellOverhead: 65535}, []string{"rate"}},

	// limit PACKETS, read as tc's sizes; seed SEED
	{"limit 50", link.Config{Qdisc: link.Qdisc{Limit: 50}}, []string{"limit"}},
	{"limit 1000", link.Config{}, []string{"limit"}},
	{"limit 10k", link.Config{Qdisc: link.Qdisc{Limit: 10240}}, []string{"limit"}},
	{"limit 1e3", link.Config{Qdisc: link.Qdisc{Limit: 1000}}, []string{"limit"}},
	{"limit 1.5", link.Config{Qdisc: link.Qdisc{Limit: 1}}, []string{"limit"}},
	{"seed 42", link.Config{Seed: 42}, []string{"seed"}},
	{"seed 18446744073709551615", link.Config{Seed: 1<<64 - 1}, []string{"seed"}},
	{"seed 0", link.Config{}, []string{"seed"}},

	// Abbreviations, resolved in tc's order: "d" is delay, "r" reorder,
	// "s" seed, "l" limit; latency and drop are delay and loss.
	{"del 10ms", link.Config{Delay: 10 * time.Millisecond}, []string{"delay"}},
	{"d 10ms", link.Config{Delay: 10 * time.Millisecond}, []string{"delay"}},
	{"lat 10ms", link.Config{Delay: 10 * time.Millisecond}, []string{"delay"}},
	{"latency 10ms 2ms", link.Config{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond}, []string{"delay"}},
	{"drop 1%", link.Config{Loss: link.RandomLoss(pct(1), 0)}, []string{"loss"}},
	{"lo 1%", link.Config{Loss: link.RandomLoss(pct(1), 0)}, []string{"loss"}},
	{"l 50", link.Config{Qdisc: link.Qdisc{Limit: 50}}, []string{"limit"}},
	{"dup 1%", link.Config{Duplicate: link.Chance{P: pct(1)}}, []string{"duplicate"}},
	{"c 1%", link.Config{Corrupt: link.Chance{P: pct(1)}}, []string{"corrupt"}},
	{"ra 1mbit", link.Config{Rate: 1e6}, []string{"rate"}},
	{"s 7", link.Config{Seed: 7}, []string{"seed"}},
	{"d 10ms 2ms dis normal r 25% g 3", link.Config{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Distribution: link.Normal, Reorder: link.Chance{P: pct(25)}, ReorderGap: 3}, []string{"delay", "distribution", "reorder", "gap"}},

	// Everything at once, in tc's order and in another.
	{"limit 50 delay 100ms 10ms 25% distribution normal loss 1% 25% duplicate 1% 10% corrupt 0.1% 5% reorder 25% 50% gap 5 rate 1mbit 20 100 -4 seed 42",
		link.Config{Qdisc: link.Qdisc{Limit: 50}, Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, JitterCorr: pct(25), Distribution: link.Normal,
			Loss: link.RandomLoss(pct(1), pct(25)), Duplicate: link.Chance{P: pct(1), Corr: pct(10)}, Corrupt: link.Chance{P: pct(0.1), Corr: pct(5)}, Reorder: link.Chance{P: pct(25), Corr: pct(50)}, ReorderGap: 5,
			Rate: 1e6, PacketOverhead: 20, CellSize: 100, CellOverhead: -4, Seed: 42},
		[]string{"limit", "delay", "distribution", "loss", "duplicate", "corrupt", "reorder", "gap", "rate", "seed"}},
	{"seed 7 rate 10mbit reorder 10% corrupt 1% dup 2% drop state 1% 10% 5% 20% 0.5% lat 5ms 1ms dist pareto limit 200",
		link.Config{Qdisc: link.Qdisc{Limit: 200}, Delay: 5 * time.Millisecond, Jitter: time.Millisecond, Distribution: link.Pareto,
			Loss: link.Loss{Model: link.LossState, P13: pct(1), P31: pct(10), P32: pct(5), P23: pct(20), P14: pct(0.5)}, Duplicate: link.Chance{P: pct(2)},
			Corrupt: link.Chance{P: pct(1)}, Reorder: link.Chance{P: pct(10)}, ReorderGap: 1, Rate: 10e6, Seed: 7},
		[]string{"seed", "rate", "reorder", "corrupt", "duplicate", "loss", "delay", "distribution", "limit"}},
	{"delay 20ms loss gemodel 1% 10% 70% 0.1% rate 256kbit",
		link.Config{Delay: 20 * time.Millisecond, Loss: link.Loss{Model: link.LossGE, GoodToBad: pct(1), BadToGood: pct(10), BadLoss: pct(70), GoodLoss: pct(0.1)}, Rate: 256e3},
		[]string{"delay", "loss", "rate"}},
}

// ParseNetem reads every netem option, in every form tc accepts, into
// the link.Config tc would set, and names the options given.
func TestParseNetem(t *testing.T) {
	for _, c := range netemCases {
		got, given, err := parseNetem(c.line)
		if err != nil {
			t.Errorf("ParseNetem(%q): %v", c.line, err)
			continue
		}
		if want := netemConfig(c.want); !reflect.DeepEqual(got, want) {
			t.Errorf("ParseNetem(%q) =\n %+v; want\n %+v", c.line, got, want)
		}
		if !reflect.DeepEqual(given, inTCOrder(c.given)) {
			t.Errorf("ParseNetem(%q) gave %q; want %q", c.line, given, c.given)
		}
	}
}

// netemErrors are lines tc or netemu refuses, with the one-line message
// that names what was typed and what would work.
var netemErrors = []struct{ line, want string }{
	// Unknown options and values in the wrong place.
	{"foo", `netem: "foo" is not a netem option; want limit, delay, distribution, loss, corrupt, duplicate, reorder, gap, rate or seed`},
	{"delay 10ms .5ms", `netem: ".5ms" is not a netem option; want limit, delay, distribution, loss, corrupt, duplicate, reorder, gap, rate or seed`},
	{"loss 1% 25% 5%", `netem: "5%" is not a netem option; want limit, delay, distribution, loss, corrupt, duplicate, reorder, gap, rate or seed`},
	{"loss state 1% 2% 3% 4% 5% 6%", `netem: "6%" is not a netem option; want limit, delay, distribution, loss, corrupt, duplicate, reorder, gap, rate or seed`},
	{"help", `netem: "help" is not a netem option; want limit, delay, distribution, loss, corrupt, duplicate, reorder, gap, rate or seed`},
	{"delays 10ms", `netem: "delays" is not a netem option; want limit, delay, distribution, loss, corrupt, duplicate, reorder, gap, rate or seed`},

	// Missing values.
	{"delay", "netem: delay needs a time, like delay 25ms"},
	{"limit", "netem: limit needs a number of packets, like limit 1000"},
	{"loss", "netem: loss needs a percentage or a model, like loss 1%, loss state 1% 10% or loss gemodel 1% 10%"},
	{"loss random", "netem: loss needs a percentage, like loss random 1%"},
	{"loss state", "netem: loss state P13 needs a percentage, like loss state 1% 10%"},
	{"loss gemodel", "netem: loss gemodel P needs a percentage, like loss gemodel 1% 10%"},
	{"duplicate", "netem: duplicate needs a percentage, like duplicate 1%"},
	{"corrupt", "netem: corrupt needs a percentage, like corrupt 0.1%"},
	{"delay 10ms reorder", "netem: reorder needs a percentage, like delay 10ms reorder 25%"},
	{"delay 10ms reorder 25% gap", "netem: gap needs a distance, like reorder 25% gap 5"},
	{"rate", "netem: rate needs a rate, like rate 10mbit"},
	{"seed", "netem: seed needs a number, like seed 42"},
	{"delay 10ms 5ms distribution", "netem: distribution needs a name (uniform, normal, pareto or paretonormal), like delay 25ms 5ms distribution normal"},

	// Percentages.
	{"loss 101%", `netem: loss "101%" is out of range; want 0% to 100%`},
	{"loss 1% 101%", `netem: loss correlation "101%" is out of range; want 0% to 100%`},
	{"loss random -1%", `netem: loss "-1%" is out of range; want 0% to 100%`},
	{"loss 1%%", `netem: loss "1%%" is not a percentage; write it like 1% or 0.5%`},
	{"loss random nan", `netem: loss "nan" is not a percentage; write it like 1% or 0.5%`},
	{"loss .5%", `netem: loss ".5%": want a percentage, random, state or gemodel, like loss 1%`},
	{"loss foo", `netem: loss "foo": want a percentage, random, state or gemodel, like loss 1%`},
	{"loss state 1% 200%", `netem: loss state P31 "200%" is out of range; want 0% to 100%`},
	{"loss gemodel 1% 10% 7x", `netem: loss gemodel 1-H "7x" is not a percentage; write it like 1% or 0.5%`},
	{"delay 10ms 5ms 1e3%", `netem: delay correlation "1e3%" is out of range; want 0% to 100%`},
	{"duplicate 1% 2x", `netem: duplicate correlation "2x" is not a percentage; write it like 1% or 0.5%`},
	{"corrupt 150", `netem: corrupt "150" is out of range; want 0% to 100%`},

	// Times: a unit is needed (tc would read nanoseconds), within range.
	{"delay 100", `netem: delay "100" has no unit; write it like 100ms or 100us (tc would read nanoseconds)`},
	{"delay 100ms 10", `netem: jitter "10" has no unit; write it like 10ms or 10us (tc would read nanoseconds)`},
	{"delay 24h", `netem: delay "24h" is not a time; write it like 25ms, 500us or 1s`},
	{"delay 10mss", `netem: delay "10mss" is not a time; write it like 25ms, 500us or 1s`},
	{"delay nanms", `netem: delay "nanms" is not a time; write it like 25ms, 500us or 1s`},
	{"delay -5ms", `netem: delay "-5ms" is negative; want 0 or more, like 25ms`},
	{"delay 86401s", `netem: delay "86401s" is over 24h0m0s, the longest netemu emulates`},
	{"delay infs", `netem: delay "infs" is over 24h0m0s, the longest netemu emulates`},
	{"delay 10ms 3s", `netem: jitter "3s" is over 2.147483647s, the most netem's tabledist takes`},

	// Dependencies between options, checked as tc checks them.
	{"reorder 25%", "netem: reorder 25% needs a delay (a reordered packet is one sent without it), like delay 10ms reorder 25%"},
	{"delay 0 10ms reorder 25%", "netem: reorder 25% needs a delay (a reordered packet is one sent without it), like delay 10ms reorder 25%"},
	{"gap 5", "netem: gap 5 needs a reorder probability, like delay 10ms reorder 25% gap 5"},
	{"delay 10ms reorder 0% gap 5", "netem: gap 5 needs a reorder probability, like delay 10ms reorder 25% gap 5"},
	{"distribution normal", "netem: distribution normal needs a delay and a jitter, like delay 25ms 5ms distribution normal"},
	{"delay 10ms distribution pareto", "netem: distribution pareto needs a delay and a jitter, like delay 25ms 5ms distribution pareto"},
	{"delay 10ms 5ms distribution gauss", `netem: distribution "gauss" is unknown; want uniform, normal, pareto or paretonormal`},
	{"delay 10ms 5ms distribution Normal", `netem: distribution "Normal" is unknown; want uniform, normal, pareto or paretonormal`},
	{"delay 10ms 5ms distribution experimental", `netem: distribution "experimental" is unknown; want uniform, normal, pareto or paretonormal`},

	// Each option once.
	{"delay 10ms delay 20ms", `netem: delay is given twice ("delay" and "delay"); give each option once`},
	{"delay 10ms lat 20ms", `netem: delay is given twice ("delay" and "lat"); give each option once`},
	{"loss 1% drop 2%", `netem: loss is given twice ("loss" and "drop"); give each option once`},
	{"seed 1 s 2", `netem: seed is given twice ("seed" and "s"); give each option once`},

	// What netemu does not support.
	{"loss 1% ecn", "netem: ecn is not supported: netemu's hosts do not negotiate ECN, so a marked packet would be lost; use loss alone"},
	{"slot 10ms", "netem: slot is not supported yet; use rate and delay"},

	// Rates and their byte counts.
	{"rate 50%", `netem: rate "50%": a percentage of the device's speed has no meaning here; give a rate, like rate 10mbit`},
	{"rate 100", `netem: rate "100" has no unit; write it like 10mbit, 500kbit or 1gbit (bits/s), 2mbps (bytes/s), or 0 for unlimited`},
	{"rate fast", `netem: rate "fast" is not a rate; write it like 10mbit, 500kbit or 1gbit (bits/s), 2mbps (bytes/s), or 0 for unlimited`},
	{"rate 1mbit 20x", `netem: rate's packet overhead "20x" is not a whole number of bytes, like rate 256kbit 20 100 -4`},
	{"rate 1mbit -", `netem: rate's packet overhead "-" is not a whole number of bytes, like rate 256kbit 20 100 -4`},
	{"rate 1mbit 08", `netem: rate's packet overhead "08" is not a whole number of bytes, like rate 256kbit 20 100 -4`},
	{"rate 1mbit 100000", `netem: rate's packet overhead "100000" is out of range; want -65535 to 65535 bytes`},
	{"rate 1mbit 3000000000", `netem: rate's packet overhead "3000000000" is not a whole number of bytes, like rate 256kbit 20 100 -4`},
	{"rate 1mbit 20 100 -70000", `netem: rate's cell overhead "-70000" is out of range; want -65535 to 65535 bytes`},
	{"rate 1mbit 20 5000000000", `netem: rate's cell size "5000000000" is not a whole number of bytes from 0 to 4294967295, like rate 256kbit 20 100 -4`},

	// Counts.
	{"limit 0", `netem: limit "0" would hold no packet; want 1 or more, like limit 1000`},
	{"limit abc", `netem: limit "abc" is not a number of packets; write it like limit 1000`},
	{"limit -5", `netem: limit "-5" is not a number of packets; write it like limit 1000`},
	{"limit 4294967296", `netem: limit "4294967296" is too large; want at most 4294967295 packets`},
	{"seed x", `netem: seed "x" is not a whole number from 0 to 18446744073709551615; write it like seed 42`},
	{"seed 0x10", `netem: seed "0x10" is not a whole number from 0 to 18446744073709551615; write it like seed 42`},
	{"delay 10ms reorder 25% gap 4294967296", `netem: gap "4294967296" is not a whole number from 0 to 4294967295; write it like reorder 25% gap 5`},
	{"delay 10ms reorder 25% gap -1", `netem: gap "-1" is not a whole number from 0 to 4294967295; write it like reorder 25% gap 5`},
}

// ParseNetem refuses what tc refuses, and what netemu cannot emulate,
// with one line that names what was typed and what would work.
func TestParseNetemErrors(t *testing.T) {
	for _, c := range netemErrors {
		got, given, err := parseNetem(c.line)
		if err == nil {
			t.Errorf("ParseNetem(%q) = %+v, %q; want error %q", c.line, got, given, c.want)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("ParseNetem(%q) error\n %s; want\n %s", c.line, err, c.want)
		}
		if !reflect.DeepEqual(got, link.Config{}) || given != nil {
			t.Errorf("ParseNetem(%q) failed but returned %+v, %q; want zeros", c.line, got, given)
		}
	}
}

// NetemString writes tc's grammar, in tc's order, leaving defaults out,
// with times and percentages as tc reads them.
func TestNetemString(t *testing.T) {
	for _, c := range []struct {
		cfg  link.Config
		want string
	}{
		{link.Config{}, ""},
		{link.Config{Qdisc: link.Qdisc{Limit: link.DefaultQueuePackets}}, ""},
		{link.Config{Qdisc: link.Qdisc{Limit: 50}}, "limit 50"},
		{link.Config{Delay: 25 * time.Millisecond}, "delay 25ms"},
		{link.Config{Delay: 1500 * time.Microsecond}, "delay 1.5ms"},
		{link.Config{Delay: 100 * time.Microsecond}, "delay 100us"},
		{link.Config{Delay: 2 * time.Second}, "delay 2s"},
		{link.Config{Delay: time.Second + 1}, "delay 1.000000001s"},
		{link.Config{Delay: 999}, "delay 999ns"},
		{link.Config{Delay: 24 * time.Hour}, "delay 86400s"},
		{link.Config{Jitter: 10 * time.Millisecond}, "delay 0 10ms"},
		{link.Config{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, JitterCorr: pct(25), Distribution: link.Normal}, "delay 100ms 10ms 25% distribution normal"},
		{link.Config{Delay: 100 * time.Millisecond, Distribution: link.Normal}, "delay 100ms"},
		{link.Config{Loss: link.RandomLoss(pct(0.3), pct(25))}, "loss 0.3% 25%"},
		{link.Config{Loss: link.RandomLoss(0, pct(25))}, "loss 0% 25%"},
		{link.Config{Loss: link.StateLoss(pct(1))}, "loss state 1%"},
		{link.Config{Loss: link.StateLoss(pct(1), pct(10))}, "loss state 1% 10%"},
		{link.Config{Loss: link.StateLoss(pct(1), pct(10), 0, 1, pct(0.5))}, "loss state 1% 10% 0% 100% 0.5%"},
		{link.Config{Loss: link.GELoss(pct(1))}, "loss gemodel 1%"},
		{link.Config{Loss: link.GELoss(pct(1), pct(10), pct(70), pct(0.1))}, "loss gemodel 1% 10% 70% 0.1%"},
		{link.Config{Duplicate: link.Chance{P: pct(1), Corr: pct(25)}, Corrupt: link.Chance{P: pct(0.1)}}, "duplicate 1% 25% corrupt 0.1%"},
		{link.Config{Delay: time.Millisecond, Reorder: link.Chance{P: pct(25)}, ReorderGap: 1}, "delay 1ms reorder 25%"},
		{link.Config{Delay: time.Millisecond, Reorder: link.Chance{P: pct(25)}, ReorderGap: 5}, "delay 1ms reorder 25% gap 5"},
		{link.Config{Rate: 1e6}, "rate 1mbit"},
		{link.Config{Rate: 256e3, PacketOverhead: 20, CellSize: 100, CellOverhead: -4}, "rate 256kbit 20 100 -4"},
		{link.Config{Rate: 256e3, CellOverhead: 5}, "rate 256kbit 0 0 5"},
		{link.Config{Rate: 256e3, CellSize: 48}, "rate 256kbit 0 48"},
		{link.Config{PacketOverhead: 14}, "rate 0 14"},
		{link.Config{Rate: 1024}, "rate 1.024kbit"},
		{link.Config{Seed: 42}, "seed 42"},
		{link.Config{Qdisc: link.Qdisc{Limit: 50}, Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, JitterCorr: pct(25), Distribution: link.Normal,
			Loss: link.RandomLoss(pct(1), pct(25)), Duplicate: link.Chance{P: pct(1), Corr: pct(10)}, Corrupt: link.Chance{P: pct(0.1), Corr: pct(5)}, Reorder: link.Chance{P: pct(25), Corr: pct(50)}, ReorderGap: 5,
			Rate: 1e6, PacketOverhead: 20, CellSize: 100, CellOverhead: -4, Seed: 42},
			"limit 50 delay 100ms 10ms 25% distribution normal loss 1% 25% duplicate 1% 10% corrupt 0.1% 5% reorder 25% 50% gap 5 rate 1mbit 20 100 -4 seed 42"},
	} {
		if got := NetemOf(c.cfg).String(); got != c.want {
			t.Errorf("NetemOf(%+v).String() = %q; want %q", c.cfg, got, c.want)
		}
	}
}

// Every link.Config ParseNetem gives comes back the same through NetemString,
// and NetemString of that is the same string again.
func TestNetemStringRoundTrip(t *testing.T) {
	for _, c := range netemCases {
		cfg, _, err := parseNetem(c.line)
		if err != nil {
			t.Errorf("ParseNetem(%q): %v", c.line, err)
			continue
		}
		checkNetemRoundTrip(t, c.line, cfg)
	}
}

func checkNetemRoundTrip(t *testing.T, line string, cfg link.Config) {
	t.Helper()
	s := NetemOf(cfg).String()
	back, _, err := parseNetem(s)
	if err != nil {
		t.Fatalf("ParseNetem(%q) = %+v, whose NetemString %q ParseNetem refuses: %v", line, cfg, s, err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Fatalf("ParseNetem(%q) =\n %+v; its NetemString %q reads back as\n %+v", line, cfg, s, back)
	}
	if again := NetemOf(back).String(); again != s {
		t.Fatalf("NetemString of ParseNetem(%q) is %q, then %q", line, s, again)
	}
}

// netemOptionNames are the options ParseNetem may report as given.
var netemOptionNames = map[string]bool{"limit": true, "delay": true, "distribution": true, "loss": true, "corrupt": true,
	"duplicate": true, "reorder": true, "gap": true, "rate": true, "seed": true}

// FuzzParseNetem: ParseNetem never panics; what it accepts is a link.Config
// that Validate accepts, given as real netem options, and that comes back
// the same through NetemString; what it refuses gets one line that starts
// with "netem: ".
func FuzzParseNetem(f *testing.F) {
	for _, c := range netemCases {
		f.Add(c.line)
	}
	for _, c := range netemErrors {
		f.Add(c.line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cfg, given, err := parseNetem(line)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "netem: ") || strings.ContainsAny(msg, "\n\r") || given != nil {
				t.Fatalf("ParseNetem(%q) error %q, given %q; want one line starting with \"netem: \" and nothing given", line, msg, given)
			}
			return
		}
		seen := map[string]bool{}
		for _, g := range given {
			if !netemOptionNames[g] || seen[g] {
				t.Fatalf("ParseNetem(%q) gave %q: %q is not a netem option or is there twice", line, given, g)
			}
			seen[g] = true
		}
		v := cfg
		v.MTU = link.DefaultMTU
		if err := v.Validate(); err != nil {
			t.Fatalf("ParseNetem(%q) = %+v, which Validate refuses: %v", line, cfg, err)
		}
		checkNetemRoundTrip(t, line, cfg)
	})
}
