package toxiproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/proxy"
)

// A toxic as the API holds it. Values are never changed once stored: an
// update stores a new one under the same id with a new version, so that
// a connection can tell a toxic it has seen from one changed since.
type toxic struct {
	name     string
	kind     *kind
	stream   string // as the client wrote it (toxiproxy echoes it verbatim)
	dir      proxy.Direction
	toxicity float32
	attrs    any // a pointer to the kind's attribute struct

	id      uint64 // the same for the toxic's whole life on its proxy
	version uint64 // new for every add and update
}

// toxicJSON is a toxic on the wire, in toxiproxy's key order.
type toxicJSON struct {
	Attributes any     `json:"attributes"`
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Stream     string  `json:"stream"`
	Toxicity   float32 `json:"toxicity"`
}

func (t *toxic) MarshalJSON() ([]byte, error) {
	return json.Marshal(toxicJSON{Attributes: t.attrs, Name: t.name, Type: t.kind.name, Stream: t.stream, Toxicity: t.toxicity})
}

// A kind is a toxic type: its attributes, and where it acts.
type kind struct {
	name string
	// attrs returns a new zero attribute struct.
	attrs func() any
	// check refuses attributes that make no sense (toxiproxy crashes or
	// loops on some: a negative rate, a slicer's average_size 0).
	check func(a any) error
	// onLink: the toxic shapes the emulated link of each connection
	// (link, and conn.relink on those open); otherwise it acts on the
	// bytes past the link (conn.go).
	onLink bool
}

// The attributes of each kind, in toxiproxy's JSON names and order. Times
// are milliseconds unless named otherwise, as toxiproxy has them.
type (
	latencyAttrs struct {
		Latency int64 `json:"latency"`
		Jitter  int64 `json:"jitter"`
	}
	bandwidthAttrs struct {
		Rate int64 `json:"rate"` // KB/s, 1 KB = 1000 bytes
	}
	slowCloseAttrs struct {
		Delay int64 `json:"delay"`
	}
	timeoutAttrs struct {
		Timeout int64 `json:"timeout"`
	}
	resetPeerAttrs struct {
		Timeout int64 `json:"timeout"`
	}
	slicerAttrs struct {
		AverageSize   int `json:"average_size"`
		SizeVariation int `json:"size_variation"`
		Delay         int `json:"delay"` // microseconds
	}
	limitDataAttrs struct {
		Bytes int64 `json:"bytes"`
	}
	noopAttrs struct{}
	// netemu's own.
	netemAttrs struct {
		Options string `json:"options"` // tc's netem options
	}
	lossAttrs struct {
		Percent     float64 `json:"percent"`
		Correlation float64 `json:"correlation"` // percent
	}
	qdiscAttrs struct {
		Options string `json:"options"` // tc's qdisc, fq_codel or codel with its options
	}
)

// kinds are the toxic types by name: toxiproxy's, then netemu's own.
var kinds = map[string]*kind{}

func init() {
	for _, k := range []*kind{
		{name: "latency", onLink: true, attrs: func() any { return &latencyAttrs{} }, check: func(a any) error {
			x := a.(*latencyAttrs)
			return errors.Join(inRange("latency", x.Latency, link.MaxDelay.Milliseconds(), "ms"), inRange("jitter", x.Jitter, link.MaxJitter.Milliseconds(), "ms"))
		}},
		{name: "bandwidth", onLink: true, attrs: func() any { return &bandwidthAttrs{} }, check: func(a any) error {
			return inRange("rate", a.(*bandwidthAttrs).Rate, maxRate, "KB/s (0 stops the traffic)")
		}},
		{name: "slow_close", attrs: func() any { return &slowCloseAttrs{} }, check: func(a any) error {
			return inRange("delay", a.(*slowCloseAttrs).Delay, maxMs, "ms")
		}},
		{name: "timeout", attrs: func() any { return &timeoutAttrs{} }, check: func(a any) error {
			return inRange("timeout", a.(*timeoutAttrs).Timeout, maxMs, "ms (0 never closes)")
		}},
		{name: "reset_peer", attrs: func() any { return &resetPeerAttrs{} }, check: func(a any) error {
			return inRange("timeout", a.(*resetPeerAttrs).Timeout, maxMs, "ms")
		}},
		{name: "slicer", attrs: func() any { return &slicerAttrs{} }, check: func(a any) error {
			x := a.(*slicerAttrs)
			if x.AverageSize < 1 || x.AverageSize > maxBytes {
				return fmt.Errorf("average_size is %d; want 1 to %d bytes", x.AverageSize, maxBytes)
			}
			return errors.Join(inRange("size_variation", int64(x.SizeVariation), maxBytes, "bytes"), inRange("delay", int64(x.Delay), maxMs*1000, "µs"))
		}},
		{name: "limit_data", attrs: func() any { return &limitDataAttrs{} }, check: func(a any) error {
			return inRange("bytes", a.(*limitDataAttrs).Bytes, math.MaxInt64, "bytes")
		}},
		{name: "noop", attrs: func() any { return &noopAttrs{} }, check: func(any) error { return nil }},
		{name: "netem", onLink: true, attrs: func() any { return &netemAttrs{} }, check: func(a any) error {
			return applyLinkToxic(&link.Config{}, a)
		}},
		{name: "loss", onLink: true, attrs: func() any { return &lossAttrs{} }, check: func(a any) error {
			x := a.(*lossAttrs)
			if x.Percent < 0 || x.Percent > 100 || x.Correlation < 0 || x.Correlation > 100 {
				return fmt.Errorf("percent is %v and correlation %v; want each from 0 to 100", x.Percent, x.Correlation)
			}
			return nil
		}},
		{name: "qdisc", onLink: true, attrs: func() any { return &qdiscAttrs{} }, check: func(a any) error {
			return applyLinkToxic(&link.Config{}, a)
		}},
	} {
		kinds[k.name] = k
	}
}

// The bounds of the attributes: a day for the times (so that none wraps
// around as a time.Duration, as toxiproxy's do), a gibibyte for a
// slicer's sizes, a terabit per second for a bandwidth.
const (
	maxMs    = 24 * 60 * 60 * 1000
	maxBytes = 1 << 30
	maxRate  = 125_000_000 // KB/s
)

// inRange refuses an attribute outside 0 to max.
func inRange(name string, v, max int64, unit string) error {
	if v < 0 || v > max {
		return fmt.Errorf("%s is %d; want 0 to %d %s", name, v, max, unit)
	}
	return nil
}

// parseStream reads a toxic's stream as toxiproxy does: upstream or
// downstream, in any case.
func parseStream(s string) (proxy.Direction, bool) {
	switch strings.ToLower(s) {
	case "upstream":
		return proxy.Up, true
	case "downstream":
		return proxy.Down, true
	}
	return 0, false
}

// decodeAttrs decodes raw over a copy of old (nil: the kind's zero
// attributes) and checks the result; old is left as it was.
func decodeAttrs(k *kind, old any, raw json.RawMessage) (any, error) {
	a := k.attrs()
	if old != nil {
		b, err := json.Marshal(old)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, a); err != nil {
			return nil, err
		}
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, a); err != nil {
			return nil, apiErr(errBadBody, err)
		}
	}
	if err := k.check(a); err != nil {
		return nil, &apiError{Message: "invalid " + k.name + " toxic: " + err.Error(), Status: 400}
	}
	return a, nil
}

// linkConfig is the link of one connection: base, with the link toxics
// of toxics that apply (on(t)) added in order, each to its direction:
// upstream is the client's direction (link.AtoB), downstream the
// server's (link.BtoA).
func linkConfig(base link.Config, toxics []*toxic, on func(*toxic) bool) (link.Config, error) {
	d, err := linkDirsOf(base, toxics, on)
	if err != nil {
		return link.Config{}, err
	}
	return d.config()
}

// linkDirs is a link's two directions as toxics are added to them in
// turn: upstream's (link.AtoB) and downstream's (link.BtoA).
type linkDirs struct{ up, down link.Config }

// baseDirs is base's two directions, before any toxic.
func baseDirs(base link.Config) linkDirs {
	up := base
	up.BtoA = nil
	down := up
	if base.BtoA != nil {
		down = *base.BtoA
	}
	return linkDirs{up, down}
}

// linkDirsOf is base with the link toxics of toxics that apply (on(t))
// added in order.
func linkDirsOf(base link.Config, toxics []*toxic, on func(*toxic) bool) (linkDirs, error) {
	d := baseDirs(base)
	for _, t := range toxics {
		if t.kind.onLink && on(t) {
			if err := d.apply(t); err != nil {
				return linkDirs{}, err
			}
		}
	}
	return d, nil
}

// apply adds link toxic t to its direction; on an error d is as it was.
func (d *linkDirs) apply(t *toxic) error {
	x := &d.up
	if t.dir == proxy.Down {
		x = &d.down
	}
	c := *x
	if err := applyLinkToxic(&c, t.attrs); err != nil {
		return fmt.Errorf("toxic %s: %v", t.name, err)
	}
	*x = c
	return nil
}

// config is the link of both directions, checked.
func (d linkDirs) config() (link.Config, error) {
	cfg := d.up.WithBtoA(d.down)
	return cfg, cfg.Validate()
}

// toxicSet is a proxy's toxics at one moment, never changed once stored.
type toxicSet struct {
	list  []*toxic // in the order added, both streams
	gen   uint64   // counts the changes of the proxy's toxics, from 1
	added *toxic   // not nil when list is gen-1's list with this toxic added at the end

	// all is the base link with every link toxic of list applied (not
	// rolled): what an add checks (Server.checkLink), kept as toxics are
	// added so that an add does not apply them all again; allErr, the
	// first toxic that did not apply.
	all    linkDirs
	allErr error
}

// atomicToxics holds a proxy's current toxicSet.
type atomicToxics = atomic.Pointer[toxicSet]

// applyLinkToxic adds a link toxic's attributes to one direction's
// config d. Toxics add up as toxiproxy's do: latencies and jitters add,
// the slowest bandwidth holds; netem's options replace what they name,
// loss and qdisc replace the direction's.
func applyLinkToxic(d *link.Config, attrs any) error {
	switch a := attrs.(type) {
	case *latencyAttrs:
		d.Delay += time.Duration(a.Latency) * time.Millisecond
		d.Jitter += time.Duration(a.Jitter) * time.Millisecond
		// toxiproxy delays each chunk in turn, so a chunk never
		// overtakes another: the link keeps the order too.
		d.KeepOrder = d.KeepOrder || a.Jitter > 0
	case *bandwidthAttrs:
		// rate 0 stops the traffic past the link (conn.go); the link
		// itself stays as it is.
		if bps := float64(a.Rate) * 8000; a.Rate > 0 && (d.Rate == 0 || bps < d.Rate) {
			d.Rate = bps
		}
	case *netemAttrs:
		n, err := tc.ParseNetem(a.Options)
		if err != nil {
			return err
		}
		if n.Has(tc.Seed) {
			return errors.New("netem's seed is the server's: each connection's link draws from the server's --seed")
		}
		*d = n.Apply(*d, tc.Both)
	case *lossAttrs:
		d.Loss = link.RandomLoss(a.Percent/100, a.Correlation/100)
	case *qdiscAttrs:
		q, err := tc.ParseQdisc(a.Options)
		if err != nil {
			return err
		}
		*d = q.Apply(*d, tc.Both)
	}
	return d.Validate()
}
