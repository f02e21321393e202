package tc

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/netemu/netemu/link"
)

// ParseNetem reads tc's netem grammar, what follows "tc qdisc add dev X
// root netem", into a Netem:
//
//	limit PACKETS
//	delay TIME [JITTER [CORRELATION]] [distribution uniform|normal|pareto|paretonormal]
//	loss [random] PERCENT [CORRELATION]
//	loss state P13 [P31 [P32 [P23 [P14]]]]
//	loss gemodel PERCENT [R [1-H [1-K]]]
//	corrupt PERCENT [CORRELATION]
//	duplicate PERCENT [CORRELATION]
//	reorder PERCENT [CORRELATION] [gap DISTANCE]
//	rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]
//	seed SEED
//
// It reads what tc reads, as tc reads it: keywords abbreviated as tc
// allows (del, lat, dr, dup, ra), latency for delay and drop for loss,
// percentages written 1% or 1, tc's defaults for the loss models' missing
// values, limit as tc's sizes (10k is 10240 packets), gap and the rate's
// byte counts in C's notations (0x14, 024), gap 1 for a reorder without
// one. The Netem knows which options were given, so that Apply replaces
// those and no others.
//
// Where it departs from tc, it does so on purpose:
//   - times and rates need a unit (25ms, 10mbit), where tc reads a bare
//     number as nanoseconds or bits/s; 0 needs none;
//   - each option is given once, where tc lets a later one override;
//   - netem's ecn and slot are not supported; they are errors that say so;
//   - distribution takes normal, pareto and paretonormal, the tables
//     netemu builds, and uniform, netem's default, for which tc ships no
//     table; not other file names;
//   - what link.Config cannot hold is an error: limit 0, a delay over
//     link.MaxDelay, a jitter over link.MaxJitter, an overhead beyond
//     ±link.MaxMTU bytes;
//   - a time is rounded to the nanosecond, where tc truncates it.
func ParseNetem(s string) (Netem, error) {
	p := &netemParser{args: strings.Fields(s)}
	c := link.Config{Qdisc: link.Qdisc{Limit: link.DefaultQueuePackets}} // netem's limit when none is given
	var given options
	typed := map[string]string{} // option → the word that gave it
	var reorderWord, gapWord string
	dist := false
	for p.i < len(p.args) {
		word := p.args[p.i]
		p.i++
		opt := ""
		for _, k := range netemKeywords {
			if strings.HasPrefix(k.word, word) {
				opt = k.opt
				break
			}
		}
		if prev, ok := typed[opt]; ok {
			return Netem{}, fmt.Errorf("netem: %s is given twice (%q and %q); give each option once", opt, prev, word)
		}
		if o, ok := optionNamed(opt); ok {
			typed[opt] = word
			given |= 1 << o
		}
		var err error
		switch opt {
		case "limit":
			c.Qdisc.Limit, err = p.limit()
		case "delay":
			if c.Delay, err = p.time("delay", link.MaxDelay, "the longest netemu emulates"); err != nil {
				break
			}
			if p.number() {
				c.Jitter, err = p.time("jitter", link.MaxJitter, "the most netem's tabledist takes")
				if err == nil && p.number() {
					c.JitterCorr, err = p.percent("delay correlation", "delay 25ms 5ms 25%")
				}
			}
		case "distribution":
			dist = true
			c.Distribution, err = p.distribution()
		case "loss":
			c.Loss, err = p.loss()
		case "corrupt":
			c.Corrupt, err = p.chance("corrupt", "corrupt 0.1%")
		case "duplicate":
			c.Duplicate, err = p.chance("duplicate", "duplicate 1%")
		case "reorder":
			if p.i < len(p.args) {
				reorderWord = "reorder " + p.args[p.i]
			}
			c.Reorder, err = p.chance("reorder", "delay 10ms reorder 25%")
		case "gap":
			var n uint64
			if n, err = p.unsigned("gap", "a distance", "reorder 25% gap 5", 0, netemMaxCount); err == nil {
				gapWord = "gap " + p.args[p.i-1]
				c.ReorderGap = int(n)
			}
		case "rate":
			err = p.rate(&c)
		case "seed":
			c.Seed, err = p.unsigned("seed", "a number", "seed 42", 10, math.MaxUint64)
		case "ecn":
			err = fmt.Errorf("netem: ecn is not supported: netemu's hosts do not negotiate ECN, so a marked packet would be lost; use loss alone")
		case "slot":
			err = fmt.Errorf("netem: slot is not supported yet; use rate and delay")
		default:
			err = fmt.Errorf("netem: %q is not a netem option; want limit, delay, distribution, loss, corrupt, duplicate, reorder, gap, rate or seed", word)
		}
		if err != nil {
			return Netem{}, err
		}
	}
	// tc's checks, in tc's order; a zero reorder probability is no reorder.
	switch {
	case c.Reorder.P > 0 && c.Delay == 0:
		return Netem{}, fmt.Errorf("netem: %s needs a delay (a reordered packet is one sent without it), like delay 10ms %s", reorderWord, reorderWord)
	case c.Reorder.P == 0 && c.ReorderGap > 0:
		return Netem{}, fmt.Errorf("netem: %s needs a reorder probability, like delay 10ms reorder 25%% %s", gapWord, gapWord)
	case dist && (c.Delay == 0 || c.Jitter == 0):
		return Netem{}, fmt.Errorf("netem: distribution %s needs a delay and a jitter, like delay 25ms 5ms distribution %s", c.Distribution, c.Distribution)
	}
	if c.Reorder.P > 0 && c.ReorderGap == 0 {
		c.ReorderGap = 1 // as tc sets it
	}
	return Netem{given: given, c: c}, nil
}

// netemKeywords are netem's options in the order tc tries them, so that
// an abbreviation means what it means to tc ("d" is delay, "r" reorder).
var netemKeywords = []struct{ word, opt string }{
	{"limit", "limit"}, {"latency", "delay"}, {"delay", "delay"}, {"loss", "loss"}, {"drop", "loss"},
	{"seed", "seed"}, {"ecn", "ecn"}, {"reorder", "reorder"}, {"corrupt", "corrupt"}, {"gap", "gap"},
	{"duplicate", "duplicate"}, {"distribution", "distribution"}, {"rate", "rate"}, {"slot", "slot"},
}

type netemParser struct {
	args []string
	i    int
}

// value returns the next word, or an error saying that opt needs what,
// like example, when there is none.
func (p *netemParser) value(opt, what, example string) (string, error) {
	if p.i >= len(p.args) {
		return "", fmt.Errorf("netem: %s needs %s, like %s", opt, what, example)
	}
	p.i++
	return p.args[p.i-1], nil
}

// number reports whether the next word is a number (tc's NEXT_IS_NUMBER).
func (p *netemParser) number() bool {
	return p.i < len(p.args) && p.args[p.i][0] >= '0' && p.args[p.i][0] <= '9'
}

// signed is number with a leading minus allowed (NEXT_IS_SIGNED_NUMBER).
func (p *netemParser) signed() bool {
	return p.number() || p.i < len(p.args) && p.args[p.i][0] == '-'
}

func (p *netemParser) percent(what, example string) (float64, error) {
	w, err := p.value(what, "a percentage", example)
	if err != nil {
		return 0, err
	}
	num := strings.TrimSuffix(w, "%")
	v, ok := cFloat(num)
	if !ok || v != v {
		return 0, fmt.Errorf("netem: %s %q is not a percentage; write it like 1%% or 0.5%%", what, w)
	}
	if v < 0 || v > 100 {
		return 0, fmt.Errorf("netem: %s %q is out of range; want 0%% to 100%%", what, w)
	}
	return v / 100, nil
}

func (p *netemParser) chance(what, example string) (link.Chance, error) {
	var c link.Chance
	var err error
	if c.P, err = p.percent(what, example); err == nil && p.number() {
		c.Corr, err = p.percent(what+" correlation", example+" 25%")
	}
	return c, err
}

// netemTimeUnits are get_time64's units, each suffix before those it ends
// with.
var netemTimeUnits = []struct {
	suffix string
	mult   float64
}{
	{"msecs", 1e6}, {"msec", 1e6}, {"usecs", 1e3}, {"usec", 1e3}, {"nsecs", 1}, {"nsec", 1},
	{"secs", 1e9}, {"sec", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"s", 1e9},
}

// time reads a time as tc's get_time64 does, but with a unit required,
// and at most max (described by why).
func (p *netemParser) time(what string, max time.Duration, why string) (time.Duration, error) {
	w, err := p.value(what, "a time", what+" 25ms")
	if err != nil {
		return 0, err
	}
	t := asciiLower(w)
	ns, ok := 0.0, false
	for _, u := range netemTimeUnits {
		if num, cut := strings.CutSuffix(t, u.suffix); cut {
			if v, isNum := cFloat(num); isNum {
				ns, ok = v*u.mult, true
				break
			}
		}
	}
	if !ok {
		if v, isNum := cFloat(t); isNum && v == 0 {
			return 0, nil
		} else if isNum && v == v {
			return 0, fmt.Errorf("netem: %s %q has no unit; write it like %sms or %sus (tc would read nanoseconds)", what, w, w, w)
		}
		return 0, fmt.Errorf("netem: %s %q is not a time; write it like 25ms, 500us or 1s", what, w)
	}
	switch {
	case ns != ns:
		return 0, fmt.Errorf("netem: %s %q is not a time; write it like 25ms, 500us or 1s", what, w)
	case ns < 0:
		return 0, fmt.Errorf("netem: %s %q is negative; want 0 or more, like 25ms", what, w)
	case math.Round(ns) > float64(max):
		return 0, fmt.Errorf("netem: %s %q is over %v, %s", what, w, max, why)
	}
	return time.Duration(math.Round(ns)), nil
}

// limit reads a packet count as tc's get_size does: a number, fractions
// dropped, with an optional k, m or g (binary) or b, kbit, mbit, gbit.
func (p *netemParser) limit() (int, error) {
	w, err := p.value("limit", "a number of packets", "limit 1000")
	if err != nil {
		return 0, err
	}
	v, ok := tcSize(asciiLower(w))
	switch {
	case !ok || v != v || v < 0:
		return 0, fmt.Errorf("netem: limit %q is not a number of packets; write it like limit 1000", w)
	case v >= netemMaxCount+1:
		return 0, fmt.Errorf("netem: limit %q is too large; want at most %d packets", w, uint64(netemMaxCount))
	case v < 1:
		return 0, fmt.Errorf("netem: limit %q would hold no packet; want 1 or more, like limit 1000", w)
	}
	return int(v), nil
}

// unsigned reads a whole number as tc's get_u32 and get_u64 do, in base
// (0: C's 0x hex, 0 octal, else decimal), at most max.
func (p *netemParser) unsigned(opt, what, example string, base int, max uint64) (uint64, error) {
	w, err := p.value(opt, what, example)
	if err != nil {
		return 0, err
	}
	v, ok := cUint(w, base)
	if !ok || v > max {
		return 0, fmt.Errorf("netem: %s %q is not a whole number from 0 to %d; write it like %s", opt, w, max, example)
	}
	return v, nil
}

// bytes reads one of rate's byte counts as tc's get_s32 (signed) or
// get_u32 does, in C's notations, within what link.Config takes.
func (p *netemParser) bytes(what string, signed bool) (int, error) {
	w := p.args[p.i] // number or signed has seen it
	p.i++
	if signed {
		v, ok := cInt32(w)
		if !ok {
			return 0, fmt.Errorf("netem: rate's %s %q is not a whole number of bytes, like rate 256kbit 20 100 -4", what, w)
		}
		if v < -link.MaxMTU || v > link.MaxMTU {
			return 0, fmt.Errorf("netem: rate's %s %q is out of range; want -%d to %d bytes", what, w, link.MaxMTU, link.MaxMTU)
		}
		return int(v), nil
	}
	v, ok := cUint(w, 0)
	if !ok || v > netemMaxCount {
		return 0, fmt.Errorf("netem: rate's %s %q is not a whole number of bytes from 0 to %d, like rate 256kbit 20 100 -4", what, w, uint64(netemMaxCount))
	}
	return int(v), nil
}

// netemMaxCount is the largest limit, gap and cell size: tc's 32 bits, or
// fewer where an int is smaller.
const netemMaxCount = min(math.MaxUint32, math.MaxInt)

func (p *netemParser) rate(c *link.Config) error {
	w, err := p.value("rate", "a rate", "rate 10mbit")
	if err != nil {
		return err
	}
	if strings.Contains(w, "%") {
		return fmt.Errorf("netem: rate %q: a percentage of the device's speed has no meaning here; give a rate, like rate 10mbit", w)
	}
	if c.Rate, err = ParseRate(w); err != nil {
		return fmt.Errorf("netem: %v", err)
	}
	// tc reads each of the three when the next word looks like one, so a
	// cell overhead may follow a packet overhead without a cell size.
	if p.signed() {
		if c.PacketOverhead, err = p.bytes("packet overhead", true); err != nil {
			return err
		}
	}
	if p.number() {
		if c.CellSize, err = p.bytes("cell size", false); err != nil {
			return err
		}
	}
	if p.signed() {
		c.CellOverhead, err = p.bytes("cell overhead", true)
	}
	return err
}

func (p *netemParser) distribution() (link.Distribution, error) {
	name, err := p.value("distribution", "a name (uniform, normal, pareto or paretonormal)", "delay 25ms 5ms distribution normal")
	if err != nil {
		return 0, err
	}
	for _, d := range link.Distributions {
		if d.String() == name {
			return d, nil
		}
	}
	return 0, fmt.Errorf("netem: distribution %q is unknown; want uniform, normal, pareto or paretonormal", name)
}

func (p *netemParser) loss() (link.Loss, error) {
	w, err := p.value("loss", "a percentage or a model", "loss 1%, loss state 1% 10% or loss gemodel 1% 10%")
	if err != nil {
		return link.Loss{}, err
	}
	// values reads the first value, then up to len(names)-1 more while the
	// next word is a number, as tc does.
	values := func(model string, names []string) ([]float64, error) {
		var ps []float64
		for i, name := range names {
			if i > 0 && !p.number() {
				break
			}
			v, err := p.percent("loss "+model+" "+name, "loss "+model+" 1% 10%")
			if err != nil {
				return nil, err
			}
			ps = append(ps, v)
		}
		return ps, nil
	}
	switch {
	case w == "random" || w[0] >= '0' && w[0] <= '9':
		example := "loss 1%"
		if w == "random" {
			example = "loss random 1%"
		} else {
			p.i-- // tc's old form: loss PERCENT
		}
		c, err := p.chance("loss", example)
		return link.RandomLoss(c.P, c.Corr), err
	case w == "state":
		ps, err := values("state", []string{"P13", "P31", "P32", "P23", "P14"})
		return link.StateLoss(ps...), err
	case w == "gemodel":
		ps, err := values("gemodel", []string{"P", "R", "1-H", "1-K"})
		return link.GELoss(ps...), err
	}
	return link.Loss{}, fmt.Errorf("netem: loss %q: want a percentage, random, state or gemodel, like loss 1%%", w)
}

// cFloat reads all of s as a number the way C's strtod does: decimal with
// an optional exponent, or hexadecimal (0x1.8, no p needed), with a sign.
func cFloat(s string) (float64, bool) {
	if s == "" || strings.ContainsRune(s, '_') {
		return 0, false
	}
	body := s
	if s[0] == '+' || s[0] == '-' {
		body = s[1:]
	}
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') && !strings.ContainsAny(body, "pP") {
		s += "p0"
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range is still a number to strtod
		return 0, false
	}
	return v, true
}

// cUint reads all of s as C's strtoull does in base (0: 0x hex, leading 0
// octal, else decimal), a sign first, a minus negating modulo 2^64 as C's
// does.
func cUint(s string, base int) (uint64, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if base == 0 {
		switch {
		case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
			base, s = 16, s[2:]
		case len(s) > 1 && s[0] == '0':
			base, s = 8, s[1:]
		default:
			base = 10
		}
	}
	v, err := strconv.ParseUint(s, base, 64) // no sign, no underscore: as C
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// cInt32 reads all of s as tc's get_s32 does: C's strtol in base 0,
// within 32 bits.
func cInt32(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg || strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	u, ok := cUint(s, 0)
	switch {
	case !ok:
		return 0, false
	case neg && u <= 1<<31:
		return -int64(u), true
	case !neg && u <= math.MaxInt32:
		return int64(u), true
	}
	return 0, false
}

// asciiLower lowers ASCII letters only, as strcasecmp compares them.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// netemString writes the direction's netem options in tc's grammar and
// order, each only when it is not at its default, so that ParseNetem
// reads the same link.Config back:
//
//	limit N (not 1000), delay TIME [JITTER [CORR]] [distribution D],
//	loss ..., duplicate P [CORR], corrupt P [CORR], reorder P [CORR]
//	[gap N], rate RATE [OVERHEAD [CELLSIZE [CELLOVERHEAD]]], seed N
//
// Times are written as tc reads them (25ms, 1.5ms, 100us, 2s), loss
// models with the fewest values that give tc's defaults for the rest.
// Fields netem has no option for (the queue discipline but for a FIFO's
// packet limit, MTU, DelayedACK, Outages, KeepOrder, BtoA) are left out,
// and so is a distribution without both a delay and a jitter, which tc
// would refuse and which has no effect.
func netemString(c link.Config) string {
	var w []string
	add := func(s ...string) { w = append(w, s...) }
	if q := c.Qdisc; q.IsFIFO() && q.Limit != 0 && q.Limit != link.DefaultQueuePackets {
		add("limit", strconv.Itoa(q.Limit))
	}
	if c.Delay != 0 || c.Jitter != 0 || c.JitterCorr != 0 {
		add("delay", netemTime(c.Delay))
		if c.Jitter != 0 || c.JitterCorr != 0 {
			add(netemTime(c.Jitter))
			if c.JitterCorr != 0 {
				add(netemPercent(c.JitterCorr))
			}
		}
		if c.Distribution != link.Uniform && c.Delay != 0 && c.Jitter != 0 {
			add("distribution", c.Distribution.String())
		}
	}
	switch l := c.Loss; l.Model {
	case link.LossRandom:
		if l.P != 0 || l.Corr != 0 {
			add("loss", netemPercent(l.P))
			if l.Corr != 0 {
				add(netemPercent(l.Corr))
			}
		}
	case link.LossState:
		add("loss", "state")
		add(netemLossValues(l, link.StateLoss, l.P13, l.P31, l.P32, l.P23, l.P14)...)
	case link.LossGE:
		add("loss", "gemodel")
		add(netemLossValues(l, link.GELoss, l.GoodToBad, l.BadToGood, l.BadLoss, l.GoodLoss)...)
	}
	chance := func(name string, ch link.Chance) {
		if ch.P != 0 || ch.Corr != 0 {
			add(name, netemPercent(ch.P))
			if ch.Corr != 0 {
				add(netemPercent(ch.Corr))
			}
		}
	}
	chance("duplicate", c.Duplicate)
	chance("corrupt", c.Corrupt)
	chance("reorder", c.Reorder)
	if c.Reorder.P > 0 && c.ReorderGap > 1 {
		add("gap", strconv.Itoa(c.ReorderGap))
	}
	if c.Rate != 0 || c.PacketOverhead != 0 || c.CellSize != 0 || c.CellOverhead != 0 {
		add("rate", netemRate(c.Rate))
		// Each value is read only after the one before it, so the ones
		// before a non-zero value are written even when zero.
		switch {
		case c.CellOverhead != 0:
			add(strconv.Itoa(c.PacketOverhead), strconv.Itoa(c.CellSize), strconv.Itoa(c.CellOverhead))
		case c.CellSize != 0:
			add(strconv.Itoa(c.PacketOverhead), strconv.Itoa(c.CellSize))
		case c.PacketOverhead != 0:
			add(strconv.Itoa(c.PacketOverhead))
		}
	}
	if c.Seed != 0 {
		add("seed", strconv.FormatUint(c.Seed, 10))
	}
	return strings.Join(w, " ")
}

// netemLossValues writes the fewest of a loss model's values from which
// model (link.StateLoss or link.GELoss), filling in tc's defaults, gives l.
func netemLossValues(l link.Loss, model func(...float64) link.Loss, vals ...float64) []string {
	n := 1
	for n < len(vals) && model(vals[:n]...) != l {
		n++
	}
	s := make([]string, n)
	for i := range s {
		s[i] = netemPercent(vals[i])
	}
	return s
}

// netemTime writes d as tc's get_time64 reads it: in the largest of s, ms,
// us and ns not above d, with as many decimals as d needs (25ms, 1.5ms,
// 100us, 2s, 1.000000001s).
func netemTime(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	sign, u := "", uint64(d)
	if d < 0 {
		sign, u = "-", -u
	}
	for _, unit := range []struct {
		name   string
		ns     uint64
		digits int
	}{{"s", 1e9, 9}, {"ms", 1e6, 6}, {"us", 1e3, 3}, {"ns", 1, 0}} {
		if u < unit.ns && unit.ns > 1 {
			continue
		}
		s := sign + strconv.FormatUint(u/unit.ns, 10)
		if frac := u % unit.ns; frac != 0 {
			s += "." + strings.TrimRight(fmt.Sprintf("%0*d", unit.digits, frac), "0")
		}
		return s + unit.name
	}
	panic("unreachable")
}

// netemPercent writes a fraction as tc's percentage, with %g's shortest
// digits, choosing among the numbers next to v*100 the shortest whose
// hundredth is v, so that ParseNetem reads v back exactly.
func netemPercent(v float64) string {
	x := v * 100
	best := strconv.FormatFloat(x, 'g', -1, 64)
	found := false
	y, z := x, x
	for i := 0; i < 4; i++ {
		for _, c := range []float64{y, z} {
			if c/100 != v {
				continue
			}
			if s := strconv.FormatFloat(c, 'g', -1, 64); !found || len(s) < len(best) {
				best, found = s, true
			}
		}
		y, z = math.Nextafter(y, math.Inf(1)), math.Nextafter(z, math.Inf(-1))
	}
	return best + "%"
}

// netemRate writes a rate as tc reads it: as FormatRate does (10mbit)
// when ParseRate reads that back exactly, else in bits.
func netemRate(r float64) string {
	if r == 0 {
		return "0"
	}
	s := FormatRate(r)
	if back, err := ParseRate(s); err == nil && back == r {
		return s
	}
	return strconv.FormatFloat(r, 'f', -1, 64) + "bit"
}
