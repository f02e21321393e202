package tc

import (
	"github.com/netemu/netemu/link"
)

// Option is one of netem's options, by its full name.
type Option uint8

// netem's options, in the order tc writes them.
const (
	Limit Option = iota
	Delay
	Distribution
	Loss
	Duplicate
	Corrupt
	Reorder
	Gap
	Rate
	Seed
	numOptions
)

var optionNames = [numOptions]string{"limit", "delay", "distribution", "loss", "duplicate", "corrupt", "reorder", "gap", "rate", "seed"}

func (o Option) String() string {
	if o < numOptions {
		return optionNames[o]
	}
	return "unknown"
}

func optionNamed(name string) (Option, bool) {
	for o, n := range optionNames {
		if n == name {
			return Option(o), true
		}
	}
	return 0, false
}

// options is a set of Options, a bit each.
type options uint16

// Netem is a line of tc's netem options: the options given, and the
// values they give. The zero Netem gives none. ParseNetem reads one,
// NetemOf takes one from a direction of a link.Config, String writes it,
// Apply puts it on a link.Config.
type Netem struct {
	given options
	c     link.Config // the values; a limit is c.Qdisc.Limit
}

// NetemOf returns the netem options of c's client→server direction (for
// the other, pass *c.BtoA) that are not at their defaults: what a netem
// qdisc needs to shape the direction as c does, as far as netem can.
func NetemOf(c link.Config) Netem {
	c.BtoA = nil
	n := Netem{c: c}
	set := func(o Option, on bool) {
		if on {
			n.given |= 1 << o
		}
	}
	q := c.Qdisc
	set(Limit, q.IsFIFO() && q.Limit != 0 && q.Limit != link.DefaultQueuePackets)
	set(Delay, c.Delay != 0 || c.Jitter != 0 || c.JitterCorr != 0)
	set(Distribution, c.Distribution != link.Uniform && c.Delay != 0 && c.Jitter != 0)
	set(Loss, !c.Loss.IsZero())
	set(Duplicate, c.Duplicate != link.Chance{})
	set(Corrupt, c.Corrupt != link.Chance{})
	set(Reorder, c.Reorder != link.Chance{})
	set(Gap, c.Reorder.P > 0 && c.ReorderGap > 1)
	set(Rate, c.Rate != 0 || c.PacketOverhead != 0 || c.CellSize != 0 || c.CellOverhead != 0)
	set(Seed, c.Seed != 0)
	return n
}

// Has reports whether n gives option o.
func (n Netem) Has(o Option) bool { return n.given&(1<<o) != 0 }

// Options are the options n gives, in tc's order.
func (n Netem) Options() []Option {
	var out []Option
	for o := range numOptions {
		if n.Has(o) {
			out = append(out, o)
		}
	}
	return out
}

// Config is n's values on an otherwise zero link.Config: the direction
// ParseNetem's line describes, with netem's limit (a FIFO of 1000
// packets) where it gives none.
func (n Netem) Config() link.Config { return n.c }

// String writes n in tc's grammar and order, each option only where its
// value is not netem's default, so that ParseNetem reads the same values
// back. Times are written as tc reads them (25ms, 1.5ms, 100us, 2s), loss
// models with the fewest values that give tc's defaults for the rest.
func (n Netem) String() string { return netemString(n.c) }

// Side says which directions of a link a netem line or a qdisc shapes.
type Side uint8

// The sides: both directions (tc on both ends), the client→server one
// (--netem-up), the server→client one (--netem-down).
const (
	Both Side = iota
	Up
	Down
)

// Apply returns c with the options n gives in place of c's, on side s.
// Up and Down set the directions apart: the other keeps what it had.
// netem's limit is the FIFO's packet limit: it puts a FIFO of that many
// packets, with no byte bound, in place of the direction's discipline. A
// seed belongs to the whole link, so Down ignores it.
func (n Netem) Apply(c link.Config, s Side) link.Config {
	return onSide(c, s, n.apply)
}

// onSide returns c with f applied to the directions of side s.
func onSide(c link.Config, s Side, f func(link.Config) link.Config) link.Config {
	down := c
	if c.BtoA != nil {
		down = *c.BtoA
	}
	switch s {
	case Up:
		return f(c).WithBtoA(down)
	case Down:
		return c.WithBtoA(f(down))
	}
	out := f(c)
	if c.BtoA != nil {
		out = out.WithBtoA(f(down))
	}
	return out
}

// apply is Apply on one direction.
func (n Netem) apply(d link.Config) link.Config {
	v := n.c
	for _, o := range n.Options() {
		switch o {
		case Limit:
			d.Qdisc = link.Qdisc{Limit: v.Qdisc.Limit}
		case Delay:
			d.Delay, d.Jitter, d.JitterCorr = v.Delay, v.Jitter, v.JitterCorr
		case Distribution:
			d.Distribution = v.Distribution
		case Loss:
			d.Loss = v.Loss
		case Duplicate:
			d.Duplicate = v.Duplicate
		case Corrupt:
			d.Corrupt = v.Corrupt
		case Reorder:
			d.Reorder, d.ReorderGap = v.Reorder, v.ReorderGap
		case Gap:
			d.ReorderGap = v.ReorderGap
		case Rate:
			d.Rate, d.PacketOverhead, d.CellSize, d.CellOverhead = v.Rate, v.PacketOverhead, v.CellSize, v.CellOverhead
		case Seed:
			d.Seed = v.Seed
		}
	}
	return d
}
