package link

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseNetem reads tc's netem grammar, what follows "tc qdisc add dev X
// root netem", into a Config for one direction:
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
// Keywords may be abbreviated as tc allows, percentages are written 1%
// or 1, times need a unit (25ms). It also returns the options given, by
// their full names, so that a caller can tell them from defaults. netem's
// ecn and slot are not supported; they are errors that say so.
func ParseNetem(s string) (Config, []string, error) {
	p := &netemParser{args: strings.Fields(s)}
	c := Config{QueuePackets: DefaultQueuePackets}
	var given []string
	var reorder, gap, dist bool
	for p.i < len(p.args) {
		word := p.args[p.i]
		p.i++
		opt := ""
		for _, o := range []string{"limit", "delay", "latency", "loss", "drop", "seed", "ecn", "reorder", "corrupt", "gap", "duplicate", "distribution", "rate", "slot"} {
			if strings.HasPrefix(o, word) {
				opt = o
				break
			}
		}
		switch opt {
		case "latency":
			opt = "delay"
		case "drop":
			opt = "loss"
		}
		if opt != "" {
			for _, g := range given {
				if g == opt {
					return Config{}, nil, fmt.Errorf("netem: %q is given twice; give each option once", opt)
				}
			}
			given = append(given, opt)
		}
		var err error
		switch opt {
		case "limit":
			var n uint64
			n, err = p.uint("limit", "PACKETS, like 1000")
			if err == nil && (n == 0 || n > math.MaxInt32) {
				err = fmt.Errorf("netem: limit %d: want 1 packet or more", n)
			}
			c.QueuePackets = int(n)
		case "delay":
			if c.Delay, err = p.time("delay"); err != nil {
				break
			}
			if p.number() {
				if c.Jitter, err = p.time("jitter"); err == nil && p.number() {
					c.JitterCorr, err = p.percent("delay correlation")
				}
			}
		case "distribution":
			dist = true
			name, ok := p.next()
			if !ok {
				err = fmt.Errorf("netem: distribution needs a name: uniform, normal, pareto or paretonormal")
				break
			}
			err = fmt.Errorf("netem: distribution %q is unknown; want uniform, normal, pareto or paretonormal", name)
			for _, d := range Distributions {
				if d.String() == name {
					c.Distribution, err = d, nil
				}
			}
		case "loss":
			c.Loss, err = p.loss()
		case "corrupt":
			c.Corrupt, err = p.chance("corrupt")
		case "duplicate":
			c.Duplicate, err = p.chance("duplicate")
		case "reorder":
			reorder = true
			c.Reorder, err = p.chance("reorder")
		case "gap":
			gap = true
			var n uint64
			n, err = p.uint("gap", "DISTANCE, like 5")
			c.ReorderGap = int(min(n, math.MaxInt32))
		case "rate":
			err = p.rate(&c)
		case "seed":
			c.Seed, err = p.uint("seed", "a number, like 42")
		case "ecn":
			err = fmt.Errorf("netem: ecn is not supported: netemu's hosts do not negotiate ECN, so a marked packet would be lost; use loss alone")
		case "slot":
			err = fmt.Errorf("netem: slot is not supported yet; use rate and delay")
		default:
			err = fmt.Errorf("netem: %q is not a netem option; want limit, delay, distribution, loss, corrupt, duplicate, reorder, gap, rate or seed", word)
		}
		if err != nil {
			return Config{}, nil, err
		}
	}
	switch {
	case reorder && c.Reorder.P > 0 && c.Delay == 0:
		return Config{}, nil, fmt.Errorf("netem: reorder needs a delay (a reordered packet is one sent without it), like delay 10ms reorder 25%%")
	case gap && !reorder:
		return Config{}, nil, fmt.Errorf("netem: gap needs reorder, like reorder 25%% gap 5")
	case dist && (c.Delay == 0 || c.Jitter == 0):
		return Config{}, nil, fmt.Errorf("netem: distribution needs a delay and a jitter, like delay 25ms 5ms distribution normal")
	}
	if reorder && c.ReorderGap == 0 {
		c.ReorderGap = 1 // as tc sets it
	}
	return c, given, nil
}

type netemParser struct {
	args []string
	i    int
}

func (p *netemParser) next() (string, bool) {
	if p.i >= len(p.args) {
		return "", false
	}
	p.i++
	return p.args[p.i-1], true
}

// number reports whether the next word is a number (tc's NEXT_IS_NUMBER).
func (p *netemParser) number() bool {
	return p.i < len(p.args) && p.args[p.i] != "" && p.args[p.i][0] >= '0' && p.args[p.i][0] <= '9'
}

// signed is number with a leading minus allowed.
func (p *netemParser) signed() bool {
	return p.number() || p.i < len(p.args) && strings.HasPrefix(p.args[p.i], "-")
}

func (p *netemParser) percent(what string) (float64, error) {
	w, ok := p.next()
	if !ok {
		return 0, fmt.Errorf("netem: %s needs a percentage, like 1%%", what)
	}
	num := strings.TrimSuffix(w, "%")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" || v != v {
		return 0, fmt.Errorf("netem: %s %q is not a percentage; write it like 1%% or 0.5%%", what, w)
	}
	if v < 0 || v > 100 {
		return 0, fmt.Errorf("netem: %s %q is out of range; want 0%% to 100%%", what, w)
	}
	return v / 100, nil
}

func (p *netemParser) chance(what string) (Chance, error) {
	var c Chance
	var err error
	if c.P, err = p.percent(what); err == nil && p.number() {
		c.Corr, err = p.percent(what + " correlation")
	}
	return c, err
}

func (p *netemParser) time(what string) (time.Duration, error) {
	w, ok := p.next()
	if !ok {
		return 0, fmt.Errorf("netem: %s needs a time, like 25ms", what)
	}
	t := strings.ToLower(w)
	units := []struct {
		suffix string
		mult   float64
	}{{"secs", 1e9}, {"sec", 1e9}, {"msecs", 1e6}, {"msec", 1e6}, {"usecs", 1e3}, {"usec", 1e3}, {"nsecs", 1}, {"nsec", 1}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"s", 1e9}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || num == "" || v < 0 || v*u.mult > float64(math.MaxInt64/2) {
				break
			}
			return time.Duration(math.Round(v * u.mult)), nil
		}
	}
	if v, err := strconv.ParseFloat(t, 64); err == nil && v == 0 {
		return 0, nil
	}
	return 0, fmt.Errorf("netem: %s %q is not a time; write it with a unit, like 25ms, 500us or 1s", what, w)
}

func (p *netemParser) uint(what, form string) (uint64, error) {
	w, ok := p.next()
	v, err := strconv.ParseUint(w, 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("netem: %s %q: want %s", what, w, form)
	}
	return v, nil
}

func (p *netemParser) int(what string) (int, error) {
	w, _ := p.next()
	v, err := strconv.ParseInt(w, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("netem: rate's %s %q is not a whole number of bytes", what, w)
	}
	return int(v), nil
}

func (p *netemParser) rate(c *Config) error {
	w, ok := p.next()
	if !ok {
		return fmt.Errorf("netem: rate needs a rate, like 10mbit")
	}
	if strings.Contains(w, "%") {
		return fmt.Errorf("netem: rate %q: a percentage of the device's speed has no meaning here; give a rate, like 10mbit", w)
	}
	r, err := ParseRate(w)
	if err != nil {
		return fmt.Errorf("netem: rate: %v", err)
	}
	c.Rate = r
	if p.signed() {
		if c.PacketOverhead, err = p.int("packet overhead"); err != nil {
			return err
		}
		if p.number() {
			if c.CellSize, err = p.int("cell size"); err != nil {
				return err
			}
			if p.signed() {
				c.CellOverhead, err = p.int("cell overhead")
			}
		}
	}
	return err
}

func (p *netemParser) loss() (Loss, error) {
	w, ok := p.next()
	if !ok {
		return Loss{}, fmt.Errorf("netem: loss needs a percentage, like loss 1%%, or a model: loss state P13 ..., loss gemodel P ...")
	}
	var ps []float64
	more := func(max int, name string) error {
		for len(ps) < max && p.number() {
			v, err := p.percent(name)
			if err != nil {
				return err
			}
			ps = append(ps, v)
		}
		return nil
	}
	switch {
	case w == "random" || w != "" && w[0] >= '0' && w[0] <= '9':
		if w != "random" {
			p.i--
		}
		c, err := p.chance("loss")
		return RandomLoss(c.P, c.Corr), err
	case w == "state":
		if !p.number() {
			return Loss{}, fmt.Errorf("netem: loss state needs P13, like loss state 1%% 10%%")
		}
		err := more(5, "loss state probability")
		return StateLoss(ps...), err
	case w == "gemodel":
		if !p.number() {
			return Loss{}, fmt.Errorf("netem: loss gemodel needs P, like loss gemodel 1%% 10%%")
		}
		err := more(4, "loss gemodel probability")
		return GELoss(ps...), err
	}
	return Loss{}, fmt.Errorf("netem: loss %q: want a percentage, random, state or gemodel", w)
}
