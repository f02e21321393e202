package link

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Defaults applied to zero fields of Config (the queue's are in qdisc.go).
const (
	DefaultMTU = 1500
	// MinMTU and MaxMTU bound every MTU of netemu: the datagram every
	// IPv4 host must accept (RFC 791), and IPv4's largest packet.
	MinMTU = 576
	MaxMTU = 65535
	// LinuxDelayedACK is Linux's TCP_DELACK_MIN, the usual delayed-ACK
	// timeout.
	LinuxDelayedACK = 40 * time.Millisecond
)

// Config describes a link. Both directions get the same parameters unless
// BtoA gives direction B→A its own. The zero value is an ideal link: no
// delay, unlimited rate, a 1000-packet FIFO, MTU 1500, no delayed-ACK
// emulation, no impairment.
type Config struct {
	// Delay is the one-way propagation delay of each direction (half the
	// round-trip time). 0 means none.
	Delay time.Duration

	// Rate is the serialization rate of each direction in bits per second.
	// Only IP bytes are counted: no link-layer framing is added. 0 means
	// unlimited (packets are never queued).
	Rate float64

	// Trace, if set, is the direction's rate in Rate's place: a
	// time-varying one, in mahimahi's format (trace.go), counted from the
	// link's creation. Rate, PacketOverhead and the cells do not apply.
	Trace *Trace

	// Qdisc is the queue discipline in front of the rate stage, per
	// direction (qdisc.go): the zero value is a drop-tail FIFO of 1000
	// packets, waiting or on the wire (Qdisc.Limit, Qdisc.LimitBytes);
	// codel and fq_codel decide at dequeue time, as Linux's sch_codel and
	// sch_fq_codel. Without a Rate the serializer never waits, so packets
	// never queue and CoDel never acts.
	Qdisc Qdisc

	// MTU is the largest IP packet the link carries, in bytes; larger ones
	// are dropped (DropTooBig). 0 means 1500.
	MTU int

	// DelayedACK, when positive, makes the link delay pure TCP ACKs the way
	// Linux's receiver does, releasing a held ACK after this long unless
	// Linux would have sent it earlier. Use LinuxDelayedACK (40ms) to mimic
	// Linux. 0 disables the stage.
	DelayedACK time.Duration

	// Outages are intervals, measured from the link's creation, during
	// which both directions drop every packet that reaches the wire
	// (DropOutage); see Outage. nil means none. The link keeps its own
	// copy.
	Outages []Outage

	// Netem's impairments, per direction, in netem's order (impair.go).
	// Probabilities and correlations are fractions: 0.01 is 1 %.

	// Loss drops packets (DropLoss): random, 4-state or Gilbert-Elliott.
	Loss Loss
	// Duplicate sends a packet twice; the copy goes first and meets loss
	// and corruption on its own, as in netem.
	Duplicate Chance
	// Corrupt flips one random bit of a packet; the receiver's checksum
	// then discards it.
	Corrupt Chance
	// Reorder delivers a packet at once, skipping the rate and the delay,
	// so that it overtakes those ahead of it; ReorderGap makes only every
	// ReorderGap-th packet a candidate (0 means 1). Needs a Delay.
	Reorder    Chance
	ReorderGap int

	// Jitter spreads each packet's delay around Delay: uniformly over
	// ±Jitter, or by Distribution scaled by Jitter, as netem's tabledist
	// does; JitterCorr weighs the previous draw into the next. At most
	// MaxJitter. Packets whose delays differ by more than their spacing
	// arrive out of order, as netem's do without a rate; KeepOrder makes
	// each packet wait for the one before it instead.
	Jitter       time.Duration
	JitterCorr   float64
	Distribution Distribution
	KeepOrder    bool

	// PacketOverhead is added to each packet's size for the rate (14 for
	// Ethernet framing; may be negative). With CellSize > 0 the rate
	// counts whole cells of CellSize bytes plus CellOverhead each (ATM:
	// 48 and 5), as netem's rate options do.
	PacketOverhead int
	CellSize       int
	CellOverhead   int

	// Seed seeds the impairments' random decisions; each direction draws
	// from its own generator. The same seed gives the same decisions.
	Seed uint64

	// Noise, when set, is the far node's time to take each packet in:
	// each arrival is delayed by a seeded draw (Noise.Draw), keeping
	// packets that would arrive in order in order. A real host or router
	// acts on a packet some tens of microseconds after its last bit
	// arrives (an interrupt, a softirq, a thread woken), and by a
	// different time each packet; the emulator's nodes act at the very
	// instant. Without that noise, flows of different round trips that
	// share a drop-tail queue meet it in fixed phase, and which flow's
	// packets are dropped follows from the phase, not from chance (Floyd
	// and Jacobson, "On Traffic Phase Effects in Packet-Switched
	// Gateways", 1992); every exact tie (an ACK-clocked reply reaching
	// the queue at the instant a packet leaves it) falls the same way
	// every time. DefaultNoise is what kernel mode's nodes were measured
	// to take (docs/HOSTNOISE.md). A packet that reorder sends ahead
	// skips it, as it skips the delay.
	Noise Noise

	// BtoA, if not nil, shapes direction B→A (server to client) instead of
	// the fields above: its Delay, Rate, Qdisc and impairments.
	// Its MTU, DelayedACK, Outages, Seed, Noise and BtoA must be zero:
	// those belong to the link.
	BtoA *Config
}

// Chance is a probability with netem's correlation: Corr weighs the
// previous random value into the next (0: independent draws).
type Chance struct {
	P, Corr float64
}

// Limits of durations, so that no time arithmetic overflows.
const (
	MaxDelay  = 24 * time.Hour
	MaxJitter = time.Duration(math.MaxInt32) // netem's tabledist takes 32-bit nanoseconds
	// MaxNoise bounds Noise's fields.
	MaxNoise = time.Second
)

// Noise is a node's time to take a packet in: Base plus an exponential
// draw of mean Spread (cut at MaxJitter), so Base + Spread on average.
// The zero Noise adds none.
type Noise struct {
	Base, Spread time.Duration
}

// DefaultNoise is Config.Noise for an experiment on a virtual clock
// (read it; do not change it): a
// fit to the time kernel mode's routers took to pass a packet on,
// measured from the links' events (`go run ./bench/accuracy
// -host-noise`, docs/HOSTNOISE.md): 15–40 µs at the 10th percentile,
// 40–54 at the median, 70–82 at the 90th, 115–167 at the 99th, 54–62 on
// average; this one's are 28, 46, 94, 163 and 55 µs.
var DefaultNoise = Noise{Base: 25 * time.Microsecond, Spread: 30 * time.Microsecond}

// IsZero reports whether n adds no time.
func (n Noise) IsZero() bool { return n.Base == 0 && n.Spread == 0 }

// String is "25µs+exp(30µs)", or "none".
func (n Noise) String() string {
	if n.IsZero() {
		return "none"
	}
	return fmt.Sprintf("%v+exp(%v)", n.Base, n.Spread)
}

// ParseNoise reads a Noise as String writes it, "25µs+exp(30µs)", or as
// BASE,SPREAD, "25us,30us", which a shell takes unquoted ("us" is µs in
// either), or "none".
func ParseNoise(s string) (Noise, error) {
	if s == "none" {
		return Noise{}, nil
	}
	t := strings.ReplaceAll(s, "us", "µs")
	base, spread, ok := strings.Cut(t, ",")
	if !ok {
		var rest string
		base, rest, ok = strings.Cut(t, "+exp(")
		spread, _ = strings.CutSuffix(rest, ")")
		ok = ok && strings.HasSuffix(rest, ")")
	}
	b, errB := time.ParseDuration(base)
	sp, errS := time.ParseDuration(spread)
	switch {
	case !ok || errB != nil || errS != nil:
		return Noise{}, fmt.Errorf("noise %q: want BASE,SPREAD such as 25us,30us (or BASE+exp(SPREAD), as records print it: %v), or none", s, DefaultNoise)
	case b < 0 || sp < 0 || b > MaxNoise || sp > MaxNoise:
		return Noise{}, fmt.Errorf("noise %q: want BASE and SPREAD from 0 to %v", s, MaxNoise)
	}
	return Noise{Base: b, Spread: sp}, nil
}

// direction returns the parameters of direction dir, defaults filled in,
// with the fields that belong to the whole link.
func (c Config) direction(dir Dir) Config {
	c = c.WithDefaults()
	if dir == BtoA && c.BtoA != nil {
		d := *c.BtoA
		d.MTU, d.DelayedACK, d.Outages, d.Seed, d.Noise = c.MTU, c.DelayedACK, c.Outages, c.Seed, c.Noise
		c = d
	}
	c.BtoA = nil
	return c
}

// WithBtoA returns c with down as its server-to-client direction: down's
// direction parameters, without the fields that belong to the whole link
// (MTU, DelayedACK, Outages, Seed, Noise, BtoA), which stay c's.
func (c Config) WithBtoA(down Config) Config {
	down.MTU, down.DelayedACK, down.Outages, down.Seed, down.Noise, down.BtoA = 0, 0, nil, 0, Noise{}, nil
	c.BtoA = &down
	return c
}

// TraceOf returns direction dir's trace, nil when its rate is fixed.
func (c Config) TraceOf(dir Dir) *Trace { return c.direction(dir).Trace }

// WithTrace returns c with t as direction dir's rate, in place of its
// Rate, PacketOverhead and cells; the other direction keeps its own.
func (c Config) WithTrace(dir Dir, t *Trace) Config {
	set := func(d Config) Config {
		d.Trace, d.Rate, d.PacketOverhead, d.CellSize, d.CellOverhead = t, 0, 0, 0, 0
		return d
	}
	down := c
	if c.BtoA != nil {
		down = *c.BtoA
	}
	if dir == AtoB {
		return set(c).WithBtoA(down)
	}
	return c.WithBtoA(set(down))
}

// Impaired reports whether any impairment is on in either direction.
func (c Config) Impaired() bool {
	imp := func(c Config) bool {
		return !c.Loss.IsZero() || c.Duplicate.P > 0 || c.Corrupt.P > 0 || c.Reorder.P > 0 || c.Jitter > 0
	}
	return imp(c) || c.BtoA != nil && imp(*c.BtoA)
}

// WithDefaults returns c with its zero fields replaced by the defaults
// they stand for, in both directions: the MTU, the queue discipline's
// parameters (Qdisc.Limit and Qdisc.Params), a reorder's
// gap. BtoA, if set, gets its own copy, and the fields that belong to the
// whole link stay zero there. A valid c gives a valid result, the
// configuration a Link runs with (Link.Config).
func (c Config) WithDefaults() Config {
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	c.Outages = slices.Clone(c.Outages) // the link's own copy (outage.go)
	c.directionDefaults(c.MTU)
	if c.BtoA != nil {
		b := *c.BtoA
		b.directionDefaults(c.MTU)
		c.BtoA = &b
	}
	return c
}

// directionDefaults fills in the defaults of the fields a direction may
// set; mtu is the link's.
func (c *Config) directionDefaults(mtu int) {
	c.Qdisc = c.Qdisc.withDefaults(mtu)
	if c.Reorder.P > 0 && c.ReorderGap == 0 {
		c.ReorderGap = 1
	}
}

// Validate reports the first field that holds nonsense, naming the field
// and the accepted range.
func (c Config) Validate() error {
	mtu := c.MTU
	if mtu == 0 {
		mtu = DefaultMTU
	}
	if err := c.validateDirection("", mtu); err != nil {
		return err
	}
	if b := c.BtoA; b != nil {
		if b.MTU != 0 || b.DelayedACK != 0 || b.Outages != nil || b.Seed != 0 || !b.Noise.IsZero() || b.BtoA != nil {
			return fmt.Errorf("link: BtoA sets MTU, DelayedACK, Outages, Seed, Noise or BtoA; those belong to the whole link: set them on the outer Config")
		}
		if err := b.validateDirection("BtoA.", mtu); err != nil {
			return err
		}
	}
	switch {
	case c.MTU < 0 || (c.MTU > 0 && c.MTU < MinMTU) || c.MTU > MaxMTU:
		return fmt.Errorf("link: MTU is %d; want %d to %d bytes (0 means %d)", c.MTU, MinMTU, MaxMTU, DefaultMTU)
	case c.DelayedACK < 0 || c.DelayedACK > MaxDelay:
		return fmt.Errorf("link: DelayedACK is %v; want a duration from 0 to %v (0 disables, 40ms is Linux)", c.DelayedACK, MaxDelay)
	case c.Noise.Base < 0 || c.Noise.Spread < 0 || c.Noise.Base > MaxNoise || c.Noise.Spread > MaxNoise:
		return fmt.Errorf("link: Noise is %v; want Base and Spread from 0 to %v (zero adds none, %v is the virtual clock's)", c.Noise, MaxNoise, DefaultNoise)
	}
	return validateOutages(c.Outages) // outage.go
}

// validateDirection checks the fields a direction may set; where prefixes
// the field names ("BtoA."), mtu is the link's.
func (c Config) validateDirection(where string, mtu int) error {
	fraction := func(name string, v float64) error {
		if v < 0 || v > 1 || v != v {
			return fmt.Errorf("link: %s%s is %v; want a fraction from 0 to 1 (0.01 is 1%%)", where, name, v)
		}
		return nil
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Duplicate.P", c.Duplicate.P}, {"Duplicate.Corr", c.Duplicate.Corr}, {"Corrupt.P", c.Corrupt.P}, {"Corrupt.Corr", c.Corrupt.Corr},
		{"Reorder.P", c.Reorder.P}, {"Reorder.Corr", c.Reorder.Corr}, {"JitterCorr", c.JitterCorr}} {
		if err := fraction(f.name, f.v); err != nil {
			return err
		}
	}
	if err := c.Loss.validate(where); err != nil {
		return err
	}
	switch {
	case c.Delay < 0 || c.Delay > MaxDelay:
		return fmt.Errorf("link: %sDelay is %v; want a duration from 0 to %v (0 means no delay)", where, c.Delay, MaxDelay)
	case c.Jitter < 0 || c.Jitter > MaxJitter:
		return fmt.Errorf("link: %sJitter is %v; want a duration from 0 to %v (netem's limit)", where, c.Jitter, MaxJitter)
	case c.Distribution > ParetoNormal:
		return fmt.Errorf("link: %sDistribution is %d; want Uniform, Normal, Pareto or ParetoNormal", where, c.Distribution)
	case c.ReorderGap < 0:
		return fmt.Errorf("link: %sReorderGap is %d; want 0 or more (0 means 1)", where, c.ReorderGap)
	case c.Reorder.P > 0 && c.Delay == 0:
		return fmt.Errorf("link: %sReorder needs a Delay: a reordered packet is one delivered without it", where)
	case c.CellSize < 0:
		return fmt.Errorf("link: %sCellSize is %d; want 0 (no cells) or more bytes", where, c.CellSize)
	case c.PacketOverhead < -MaxMTU || c.PacketOverhead > MaxMTU || c.CellOverhead < -MaxMTU || c.CellOverhead > MaxMTU:
		return fmt.Errorf("link: %sPacketOverhead or CellOverhead is out of range; want -%d to %d bytes", where, MaxMTU, MaxMTU)
	}
	switch {
	case c.Trace != nil && len(c.Trace.ms) == 0:
		return fmt.Errorf("link: %sTrace has no opportunity; make one with ReadTrace, ParseTrace or a generator (ConstantTrace, ...)", where)
	case c.Trace != nil && (c.Rate != 0 || c.PacketOverhead != 0 || c.CellSize != 0):
		return fmt.Errorf("link: %sTrace and Rate (or PacketOverhead, CellSize) both set; the trace is the direction's rate: give one", where)
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0:
		return fmt.Errorf("link: %sRate is %v; want bits per second, a finite number of 0 or more (0 means unlimited)", where, c.Rate)
	case c.Rate > 0 && c.Rate < 8:
		return fmt.Errorf("link: %sRate is %v bit/s; want at least 8 bit/s, or 0 for unlimited", where, c.Rate)
	}
	return c.Qdisc.validate(where, mtu)
}
