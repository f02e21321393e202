package cli

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/workloads"
)

// The list flags as an experiment.Grid: each list flag an axis, the
// netem lines and the qdiscs its Shape, and the grid's refusals worded
// as the flags that make them.

// cases expands the options into the cases to run: every combination of
// the list flags (sweep), times the workload's variants.
func (o *Options) cases() ([]experiment.Case, error) {
	cmd := o.cmd.Name
	g := &experiment.Grid{Axes: o.gridAxes(), Shape: o.shape, TCPs: o.tcp.vals, Case: experiment.Case{Link: link.Config{MTU: o.MTU}}}
	if !o.cmd.Lists {
		if err := o.checkOneValue(g.Axes); err != nil {
			return nil, err
		}
		g.TCPs = g.TCPs[:1] // compare runs each TCP of the list itself
	}
	ws, err := o.build()
	if err != nil {
		return nil, Usagef("%s %s: %v", cmd, o.kind.Name, err)
	}
	tcp, err := o.TCPConfig()
	if err != nil {
		return nil, err
	}
	clk, err := o.ClockMode()
	if err != nil {
		return nil, err
	}
	if err := o.checkRun(clk, ws); err != nil {
		return nil, err
	}
	if o.Exact && clk == emu.Real {
		return nil, Usagef("%s: --exact applies to the virtual clock; the real clock's hosts take the time they take", cmd)
	}
	if o.set["host-noise"] {
		n, err := link.ParseNoise(o.HostNoise)
		switch {
		case err != nil:
			return nil, Usagef("%s: --host-noise %q: want BASE,SPREAD, a fixed time and an exponential draw's mean, each from 0 to %v, such as 25us,30us (the default; nodes that take no time are --exact)", cmd, o.HostNoise, link.MaxNoise)
		case n.IsZero():
			return nil, Usagef("%s: --host-noise %s: for nodes that take no time give --exact", cmd, o.HostNoise)
		case o.Exact:
			return nil, Usagef("%s: --host-noise and --exact: give one; --exact is nodes that take no time", cmd)
		case clk == emu.Real:
			return nil, Usagef("%s: --host-noise applies to the virtual clock; the real clock's hosts take the time they take", cmd)
		}
		g.Case.Link.Noise = n
	}
	g.Workloads, g.Case.TCP, g.Case.Clock, g.Case.Seed, g.Case.Exact = ws, tcp, clk, o.Seed, o.Exact
	if g.Case.Shape, err = o.network(); err != nil {
		return nil, err
	}
	// What a workload's defaults leave to where it runs (share's flows,
	// on two hosts or per flow of a shape) is known now.
	for _, w := range ws {
		c := g.Case
		c.Workload = w
		if err := c.Validate(); err != nil {
			return nil, Usagef("%s %s: %s", cmd, o.kind.Name, strings.TrimPrefix(err.Error(), w.Name()+": "))
		}
	}
	if err := o.checkBDPQueues(); err != nil {
		return nil, err
	}
	// The cells are counted before any is built: a list too long is
	// refused at once, not after minutes of building.
	if err := checkCells(cmd, g); err != nil {
		return nil, err
	}
	cases, err := g.Cases()
	if err != nil {
		return nil, gridUsage(err)
	}
	o.grid = g
	return cases, nil
}

// checkRun checks what the cases run with besides their links: the
// backend, the figures' files, what the workloads ws need of the clock
// clk and the backend, their timings for --waterfall, and the MTU.
func (o *Options) checkRun(clk emu.ClockMode, ws []workloads.Workload) error {
	if _, err := o.NewBackend(o.Backend); err != nil {
		return err
	}
	if err := o.checkFigures(); err != nil {
		return err
	}
	if err := o.checkNeeds(clk, ws); err != nil {
		return err
	}
	if o.waterfall != "" {
		if err := timeRequests(ws); err != nil {
			return err
		}
	}
	return o.CheckMTU()
}

// checkOneValue refuses, for run, explain and compare, a list flag with
// several values: those are sweep's. A list of queue disciplines is a
// choice between kinds of queue, as a workload's variants are, so they
// take one (a case, a row, a figure per discipline), and compare takes
// a list of TCPs.
func (o *Options) checkOneValue(axes []experiment.Axis) error {
	cmd := o.cmd.Name
	for _, a := range axes {
		if a.N > 1 && a.Name != "qdisc" {
			return Usagef("%s: --%s has %d values; use netemu sweep for lists", cmd, a.Name, a.N)
		}
	}
	if n := len(o.tcp.vals); n > 1 && !o.cmd.BothBackends {
		return Usagef("%s: --tcp has %d values; use netemu sweep to run each, or netemu compare (root) to see them beside kernel TCP", cmd, n)
	}
	return nil
}

// checkCells refuses a grid of more than MaxCells cells, naming the
// lists that multiply: the workload's variants, the axes, the TCPs.
func checkCells(cmd string, g *experiment.Grid) error {
	if g.Cells() <= MaxCells {
		return nil
	}
	var why []string
	if n := len(g.Workloads); n > 1 {
		why = append(why, fmt.Sprintf("%d variants", n))
	}
	for _, a := range g.Axes {
		if a.N > 1 {
			why = append(why, fmt.Sprintf("--%s %d", a.Name, a.N))
		}
	}
	if n := len(g.TCPs); n > 1 {
		why = append(why, fmt.Sprintf("--tcp %d", n))
	}
	return Usagef("%s: %s make more than %d cells, the most a sweep runs; split the study (--shard runs a part) or take fewer values", cmd, strings.Join(why, " × "), MaxCells)
}

// gridUsage words the grid's refusals as usage errors: a link that is
// not valid, named by its values, and an RTT no handshake completes.
// Shape's errors come worded already.
func gridUsage(err error) error {
	var ce *experiment.CellError
	var he *experiment.HandshakeError
	switch {
	case errors.As(err, &ce):
		return Usagef("%s: %v", ce.Label, strings.TrimPrefix(ce.Err.Error(), "link: "))
	case errors.As(err, &he):
		return Usagef("%v", he)
	}
	return err
}

// gridAxes are the list flags as the grid's axes, in the order they
// vary, outermost first. The RTT and the rate have columns of their own.
func (o *Options) gridAxes() []experiment.Axis {
	pct := func(v float64) string { return strconv.FormatFloat(v*100, 'g', -1, 64) + "%" }
	dur := func(f *listFlag[time.Duration], set func(*link.Config, time.Duration)) experiment.Axis {
		return listAxis(f, func(i int) string { return f.name + " " + fmtDur(f.vals[i]) }, func(i int) string { return f.name + f.rawAt(i) }, set)
	}
	chance := func(f *listFlag[float64], set func(*link.Config, float64)) experiment.Axis {
		return listAxis(f, func(i int) string { return f.name + " " + pct(f.vals[i]) },
			func(i int) string { return f.name + strings.ReplaceAll(pct(f.vals[i]), "%", "pct") }, set)
	}
	rate := func(i int) string { return tc.FormatRate(o.rate.vals[i]) }
	qdisc := func(i int) string { return o.qdisc.vals[i].String() }
	axes := []experiment.Axis{
		dur(o.rtt, func(c *link.Config, d time.Duration) { c.Delay = d / 2 }),
		listAxis(o.rate, rate, rate, func(c *link.Config, v float64) { c.Rate = v }),
		listAxis(o.queue, func(i int) string { return "queue " + o.queue.rawAt(i) }, func(i int) string { return "queue" + o.queue.rawAt(i) },
			func(c *link.Config, q queueSize) { q.apply(c) }),
		listAxis(o.qdisc, qdisc, func(i int) string { return strings.ReplaceAll(qdisc(i), " ", "-") },
			func(c *link.Config, q tc.Qdisc) { *c = q.Apply(*c, tc.Both) }),
		dur(o.delack, func(c *link.Config, d time.Duration) { c.DelayedACK = d }),
		chance(o.loss, func(c *link.Config, v float64) { c.Loss = link.RandomLoss(v, 0) }),
		dur(o.jitter, func(c *link.Config, d time.Duration) { c.Jitter = d }),
		chance(o.reorder, func(c *link.Config, v float64) { c.Reorder = link.Chance{P: v} }),
		chance(o.duplicate, func(c *link.Config, v float64) { c.Duplicate = link.Chance{P: v} }),
		chance(o.corrupt, func(c *link.Config, v float64) { c.Corrupt = link.Chance{P: v} }),
		o.traceAxis(o.traceUp, link.AtoB),
		o.traceAxis(o.traceDown, link.BtoA),
	}
	axes[0].Column, axes[1].Column = true, true
	return axes
}

// listAxis is the axis of list flag f: value i named by label and slug,
// set on a link by set.
func listAxis[T any](f *listFlag[T], label, slug func(i int) string, set func(*link.Config, T)) experiment.Axis {
	return experiment.Axis{Name: f.name, N: len(f.vals), Label: label, Slug: slug, Apply: func(i int, c *link.Config) { set(c, f.vals[i]) }}
}

// traceAxis is the axis of --trace-up or --trace-down, the trace of
// direction dir: each value a trace file, or none (nil, unlabelled). It
// is Late: the netem lines and qdiscs may have set the directions apart.
func (o *Options) traceAxis(f *listFlag[*link.Trace], dir link.Dir) experiment.Axis {
	label := func(i int) string {
		if f.vals[i] == nil {
			return ""
		}
		return f.name + " " + f.vals[i].Name
	}
	a := listAxis(f, label, func(i int) string { return strings.ReplaceAll(label(i), " ", "-") }, func(c *link.Config, t *link.Trace) {
		if t == nil {
			return
		}
		if o.traceOnce {
			once := *t
			once.Once = true
			t = &once
		}
		*c = c.WithTrace(dir, t)
	})
	a.Late = true
	return a
}

// shape is the grid's Shape: it refuses a byte limit under the MTU,
// applies the netem lines and the qdiscs to lc, and refuses what a
// trace makes moot.
func (o *Options) shape(lc link.Config) (link.Config, error) {
	if b := lc.Qdisc.LimitBytes; b > 0 && b < o.MTU {
		return lc, Usagef("--queue %d bytes: want at least the MTU (%d bytes) so a full packet fits", b, o.MTU)
	}
	lc, err := o.withNetem(lc)
	if err != nil {
		return lc, err
	}
	if lc, err = o.withQdisc(lc); err != nil {
		return lc, err
	}
	return lc, o.checkTraces()
}

// netemOptions are the flags that set what a netem option also sets.
var netemOptions = map[tc.Option]string{tc.Delay: "rtt", tc.Limit: "queue", tc.Rate: "rate", tc.Loss: "loss", tc.Reorder: "reorder", tc.Duplicate: "duplicate", tc.Corrupt: "corrupt", tc.Seed: "seed"}

// withNetem applies the --netem lines to c: the shared one to both
// directions, --netem-up to client→server, --netem-down to server→client.
// An option set both by a flag and by a netem line is a usage error, and
// so is netem's limit with a qdisc that has its own.
func (o *Options) withNetem(c link.Config) (link.Config, error) {
	names := []string{"netem", "netem-up", "netem-down"}
	sides := []tc.Side{tc.Both, tc.Up, tc.Down}
	var lines [3]tc.Netem
	for i, line := range o.netem {
		if line == "" {
			continue
		}
		n, err := tc.ParseNetem(line)
		if err != nil {
			return c, Usagef("--%s %q: %v", names[i], line, strings.TrimPrefix(err.Error(), "netem: "))
		}
		for _, g := range n.Options() {
			if f, ok := netemOptions[g]; ok && o.set[f] {
				return c, Usagef("--%s and --%s's %s both set the %s; give it once", f, names[i], g, g)
			}
			if g == tc.Delay && n.Config().Jitter > 0 && o.set["jitter"] {
				return c, Usagef("--jitter and --%s's delay both set the jitter; give it once", names[i])
			}
		}
		lines[i] = n
	}
	for i, n := range lines {
		if n.Has(tc.Limit) && !c.Qdisc.IsFIFO() {
			return c, queueTwice("netem's limit", "qdisc", c.Qdisc)
		}
		if o.netem[i] != "" {
			c = n.Apply(c, sides[i])
		}
	}
	return c, nil
}

// queueTwice is the usage error for a queue limit given with a qdisc
// that has its own.
func queueTwice(other, flag string, q link.Qdisc) error {
	return Usagef("%s and --%s %s both bound the queue; %s has its own limit (limit N): drop %s", other, flag, tc.Qdisc(q), q.Kind, other)
}

// withQdisc checks that a qdisc with a limit of its own (all but the
// FIFO) comes without --queue or netem's limit, and gives the
// server→client direction its own qdisc with --qdisc-down.
func (o *Options) withQdisc(c link.Config) (link.Config, error) {
	var down tc.Qdisc
	if o.qdiscDown != "" {
		if strings.Contains(o.qdiscDown, ",") {
			return c, Usagef("--qdisc-down %q: takes one queue discipline, not a list; to compare several, list them in --qdisc", o.qdiscDown)
		}
		var err error
		if down, err = tc.ParseQdisc(o.qdiscDown); err != nil {
			return c, Usagef("--qdisc-down %q: %v", o.qdiscDown, strings.TrimPrefix(err.Error(), "qdisc "))
		}
	}
	if !c.Qdisc.IsFIFO() && o.set["queue"] {
		return c, queueTwice("--queue", "qdisc", c.Qdisc)
	}
	if o.qdiscDown == "" {
		return c, nil
	}
	d := c
	if c.BtoA != nil {
		d = *c.BtoA
	}
	// A FIFO limit other than the default comes from --queue or netem's
	// limit.
	if q := d.Qdisc; !down.IsFIFO() && q.IsFIFO() && (o.set["queue"] || q.LimitBytes != 0 || q.Limit != 0 && q.Limit != link.DefaultQueuePackets) {
		other := "--queue"
		if !o.set["queue"] {
			other = "netem's limit" // --netem or --netem-down
		}
		return c, queueTwice(other, "qdisc-down", link.Qdisc(down))
	}
	return down.Apply(c, tc.Down), nil
}

// checkTraces refuses what a trace makes moot: a netem rate on the
// direction it gives the rate of, --rate when both directions have one,
// --trace-once without a trace.
func (o *Options) checkTraces() error {
	has := func(f *listFlag[*link.Trace]) bool {
		return slices.ContainsFunc(f.vals, func(t *link.Trace) bool { return t != nil })
	}
	up, down := has(o.traceUp), has(o.traceDown)
	for _, c := range []struct {
		on        bool
		flag      string
		lines     []int
		lineFlags []string
	}{{up, "trace-up", []int{0, 1}, []string{"netem", "netem-up"}}, {down, "trace-down", []int{0, 2}, []string{"netem", "netem-down"}}} {
		for k, i := range c.lines {
			if n, err := tc.ParseNetem(o.netem[i]); c.on && o.netem[i] != "" && err == nil && n.Has(tc.Rate) {
				return Usagef("--%s and --%s's rate both set the rate of one direction; give one", c.flag, c.lineFlags[k])
			}
		}
	}
	switch {
	case up && down && o.set["rate"]:
		return Usagef("--rate does not apply: --trace-up and --trace-down give both directions' rates")
	case o.traceOnce && !up && !down:
		return Usagef("--trace-once does not apply: it plays --trace-up or --trace-down once; give one")
	}
	return nil
}

// queueSize is a --queue value: a FIFO's limit as tc writes it, or a
// multiple of the path's bandwidth-delay product ("4bdp"), which each
// cell sets from its own RTT and rate.
type queueSize struct {
	q   tc.Qdisc
	bdp float64 // > 0: this many bandwidth-delay products
}

// parseQueueSize reads a --queue value: 1000, 150KB, 4bdp, 0.5bdp.
func parseQueueSize(s string) (queueSize, error) {
	if n, ok := strings.CutSuffix(strings.ToLower(s), "bdp"); ok {
		v, err := strconv.ParseFloat(n, 64)
		if err != nil || n == "" || !(v > 0) || v > 1000 {
			return queueSize{}, fmt.Errorf("%q is not a number of bandwidth-delay products; write it like 4bdp or 0.5bdp (up to 1000bdp)", s)
		}
		return queueSize{bdp: v}, nil
	}
	q, err := tc.ParseQueue(s)
	return queueSize{q: q}, err
}

// apply sets the FIFO's limit on c: for a multiple of the
// bandwidth-delay product, that many times the packets of the MTU that
// c's rate carries in its round trip, rounded, at least one.
func (v queueSize) apply(c *link.Config) {
	if v.bdp == 0 {
		c.Qdisc = link.Qdisc(v.q)
		return
	}
	mtu := c.MTU
	if mtu == 0 {
		mtu = link.DefaultMTU
	}
	rtt := c.Delay
	if c.BtoA != nil {
		rtt += c.BtoA.Delay
	} else {
		rtt += c.Delay
	}
	packets := v.bdp * c.Rate * rtt.Seconds() / 8 / float64(mtu)
	c.Qdisc = link.Qdisc{Limit: max(1, int(math.Round(packets)))}
}

// checkBDPQueues refuses a --queue in bandwidth-delay products where a
// cell has no product to count: an unlimited rate, or a trace's.
func (o *Options) checkBDPQueues() error {
	if !slices.ContainsFunc(o.queue.vals, func(q queueSize) bool { return q.bdp > 0 }) {
		return nil
	}
	if slices.Contains(o.rate.vals, 0) {
		return Usagef("--queue %s: a bandwidth-delay product needs a rate; --rate 0 (unlimited) has none", o.queue.String())
	}
	if slices.ContainsFunc(o.traceUp.vals, func(t *link.Trace) bool { return t != nil }) || slices.ContainsFunc(o.traceDown.vals, func(t *link.Trace) bool { return t != nil }) {
		return Usagef("--queue %s: a bandwidth-delay product needs a fixed rate; a trace's varies", o.queue.String())
	}
	return nil
}
