package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// The flags every command shares: the link, the stacks, the backend and
// the outputs. A workload's own flags come from its workloads.Kind.

// listFlag is a flag that takes one value, or a comma-separated list in
// sweep. Each element is parsed once, when the flag is set; raw keeps the
// text for messages.
type listFlag[T any] struct {
	name  string
	raw   []string
	vals  []T
	parse func(string) (T, error)
}

func (f *listFlag[T]) String() string { return strings.Join(f.raw, ",") }

// rawAt is the text of the i-th value.
func (f *listFlag[T]) rawAt(i int) string { return f.raw[i] }

func (f *listFlag[T]) Set(s string) error {
	if n := strings.Count(s, ",") + 1; n > maxCells {
		return fmt.Errorf("%d values; a sweep has at most %d cells", n, maxCells)
	}
	var raw []string
	var vals []T
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		x, err := f.parse(v)
		if err != nil {
			return err
		}
		raw, vals = append(raw, v), append(vals, x)
	}
	f.raw, f.vals = raw, vals
	return nil
}

func newList[T any](fs *flag.FlagSet, name, def, help string, parse func(string) (T, error)) *listFlag[T] {
	f := &listFlag[T]{name: name, parse: parse}
	if err := f.Set(def); err != nil {
		panic("netemu: bad default for --" + name + ": " + err.Error())
	}
	fs.Var(f, name, help)
	return f
}

func parseDuration(what string) func(string) (time.Duration, error) {
	return func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration; write it like 50ms, 1.5s or 0", s)
		}
		if d < 0 {
			return 0, fmt.Errorf("%s %q is negative; want 0 or more, like 50ms", what, s)
		}
		return d, nil
	}
}

// parsePercent reads a probability written as a percentage: 1%, 0.5%, 0.
func parsePercent(what string) func(string) (float64, error) {
	return func(s string) (float64, error) {
		num, pct := strings.CutSuffix(s, "%")
		v, err := strconv.ParseFloat(num, 64)
		switch {
		case err != nil || num == "" || v != v:
			return 0, fmt.Errorf("%s %q is not a percentage; write it like 1%% or 0.5%%", what, s)
		case !pct && v != 0:
			return 0, fmt.Errorf("%s %q needs a %% sign; write it like %s%%", what, s, s)
		case v < 0 || v > 100:
			return 0, fmt.Errorf("%s %q is out of range; want 0%% to 100%%", what, s)
		}
		return v / 100, nil
	}
}

// parseQdisc reads one --qdisc value.
func parseQdisc(s string) (tc.Qdisc, error) {
	q, err := tc.ParseQdisc(s)
	if err != nil {
		return q, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "qdisc "))
	}
	return q, nil
}

// options are the parsed flags of a command.
type options struct {
	kind      workloads.Kind
	build     func() ([]workloads.Workload, error) // the kind's workloads from its flags
	rtt       *listFlag[time.Duration]
	rate      *listFlag[float64]
	queue     *listFlag[tc.Qdisc] // a FIFO's limit
	qdisc     *listFlag[tc.Qdisc]
	qdiscDown string // the server→client direction's qdisc, when it differs
	delack    *listFlag[time.Duration]
	loss      *listFlag[float64]
	jitter    *listFlag[time.Duration]
	reorder   *listFlag[float64]
	duplicate *listFlag[float64]
	corrupt   *listFlag[float64]
	netem     [3]string // tc netem lines: both directions, up (client→server), down
	traceUp   *listFlag[*link.Trace]
	traceDown *listFlag[*link.Trace]
	traceOnce bool
	traces    map[string]*link.Trace // the trace files read, by path as given: each read once
	cc        string
	tcp       *listFlag[tcpstack.Impl]
	clock     string
	seed      uint64
	mtu       int
	json      bool
	backend   string
	via       string
	pcap      string
	timeline  string
	mmLogUp   string
	mmLogDown string
	plot      string
	waterfall string
	set       map[string]bool // flags given on the command line
	sweeping  bool            // cases are a sweep's: a list of --tcp is an axis

	// sweep only
	seedsFlag string // --seeds as typed
	jobs      int
	out       string // results file
	resume    bool
	shardFlag string
	study     string // the study file's name (--spec), for records
	studyHash string // its contents' SHA-256, hex

	written []writtenFile // the files the command wrote, in order, for announce
}

// writtenFile is a file a command wrote, and the flag that asked for it.
type writtenFile struct{ flag, path string }

// wrote records that the command wrote path for --flag; "" is no file.
func (o *options) wrote(flag, path string) {
	if path != "" {
		o.written = append(o.written, writtenFile{flag, path})
	}
}

// announce names on stderr every file the command wrote, one line each,
// so that the files a command of several cases writes beside the one
// typed (--plot x.svg: x-fifo.svg, x-codel.svg) are found.
func (o *options) announce(stderr io.Writer) {
	for _, f := range o.written {
		fmt.Fprintf(stderr, "netemu: wrote %s (--%s)\n", f.path, f.flag)
	}
	o.written = nil
}

// parseArgs parses "<workload> [flags]": the shared flags may come first,
// the workload's own come after its name.
func parseArgs(cmd string, args []string) (*options, error) {
	o := &options{}
	fs := newFlagSet(cmd, o)
	if err := parseFlags(fs, args, ""); err != nil {
		return nil, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return nil, usagef("%s: which workload? want %s", cmd, workloads.Names())
	}
	kind, ok := workloads.Lookup(rest[0])
	if !ok {
		return nil, usagef("unknown workload %q; want %s", rest[0], workloads.Names())
	}
	o.kind, o.build = kind, kind.Flags(fs)
	if err := parseFlags(fs, rest[1:], kind.Name); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		args := rest[1:]
		if i := len(args) - fs.NArg(); i > 0 && (fs.Arg(0) == "true" || fs.Arg(0) == "false") {
			// "--timings true": a switch takes no separate value.
			if name := strings.TrimLeft(args[i-1], "-"); strings.HasPrefix(args[i-1], "-") && fs.Lookup(name) != nil {
				if b, ok := fs.Lookup(name).Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
					return nil, usagef("%s: --%s is a switch: write --%s alone to turn it on, or --%s=%s", cmd, name, name, name, fs.Arg(0))
				}
			}
		}
		return nil, usagef("%s: unexpected argument %q; flags look like --rtt 50ms", cmd, fs.Arg(0))
	}
	o.set = setFlags(fs)
	if err := o.notApplicable(cmd); err != nil {
		return nil, err
	}
	if err := o.checkOutputs(); err != nil {
		return nil, err
	}
	return o, nil
}

// notes are one-line remarks on what was typed that is valid but easy to
// misread, for stderr.
func (o *options) notes() []string {
	var out []string
	for _, r := range o.rate.raw {
		if l := strings.ToLower(r); strings.HasSuffix(l, "bps") && l != "0" {
			v, _ := tc.ParseRate(r)
			out = append(out, fmt.Sprintf("note: --rate %s is bytes per second, as tc reads it: %s; write %sbit for bits", r, tc.FormatRate(v), strings.TrimSuffix(l, "bps")))
		}
	}
	names := []string{"netem", "netem-up", "netem-down"}
	for i, line := range o.netem {
		words := strings.Fields(line)
		for j, w := range words {
			if w != "rate" || j+1 == len(words) {
				continue
			}
			r := words[j+1]
			if l := strings.ToLower(r); strings.HasSuffix(l, "bps") {
				if v, err := tc.ParseRate(r); err == nil {
					out = append(out, fmt.Sprintf("note: --%s's rate %s is bytes per second, as tc reads it: %s; write %sbit for bits", names[i], r, tc.FormatRate(v), strings.TrimSuffix(l, "bps")))
				}
			}
		}
	}
	if n := o.netemLeavesOut(); n != "" {
		out = append(out, n)
	}
	if o.set["jobs"] && o.jobs > availableCPUs() {
		out = append(out, fmt.Sprintf("note: --jobs %d is more than the %d CPUs this process may use; a worker keeps about one core busy, so the workers beyond %d take turns and the sweep is no faster", o.jobs, availableCPUs(), availableCPUs()))
	}
	return out
}

// netemLeavesOut is a note for netem lines that set no delay or no rate
// for a direction while --rtt or --rate is not given either: netemu's
// defaults fill in (50 ms, 10mbit) where tc's netem would add no delay
// and no rate limit. "" when there is nothing to say.
func (o *options) netemLeavesOut() string {
	if o.netem == [3]string{} {
		return ""
	}
	sets := func(opt tc.Option, lines ...string) bool {
		for _, l := range lines {
			if n, err := tc.ParseNetem(l); err == nil && n.Has(opt) {
				return true
			}
		}
		return false
	}
	var opts, kept, flags, tcs []string
	for _, d := range []struct {
		opt      tc.Option
		flag, tc string
	}{{tc.Delay, "rtt", "no delay"}, {tc.Rate, "rate", "no rate limit"}} {
		up := o.netem[0] != "" || o.netem[1] != ""
		down := o.netem[0] != "" || o.netem[2] != ""
		missing := up && !sets(d.opt, o.netem[0], o.netem[1]) || down && !sets(d.opt, o.netem[0], o.netem[2])
		if missing && !o.set[d.flag] {
			opts = append(opts, d.opt.String())
			kept = append(kept, "--"+d.flag+" "+defaultOf(d.flag))
			flags = append(flags, "--"+d.flag)
			tcs = append(tcs, d.tc)
		}
	}
	if len(kept) == 0 {
		return ""
	}
	return fmt.Sprintf("note: the netem options give no %s: the link keeps netemu's %s, where tc's netem would add %s; give them in the netem options or with %s",
		strings.Join(opts, " and no "), strings.Join(kept, " and "), strings.Join(tcs, " and "), strings.Join(flags, " and "))
}

// printNotes writes the notes to stderr.
func (o *options) printNotes(stderr io.Writer) {
	for _, n := range o.notes() {
		fmt.Fprintf(stderr, "netemu: %s\n", n)
	}
}

// checkOutputs checks the output files before anything runs: each names
// a directory that exists, and no two name the same file.
func (o *options) checkOutputs() error {
	seen := map[string]string{}
	for _, f := range []struct{ flag, path string }{{"pcap", o.pcap}, {"timeline", o.timeline}, {"mm-log-up", o.mmLogUp}, {"mm-log-down", o.mmLogDown}, {"plot", o.plot}, {"waterfall", o.waterfall}} {
		if f.path == "" {
			continue
		}
		abs, err := filepath.Abs(f.path)
		if err != nil {
			return usagef("--%s %s: %v", f.flag, f.path, err)
		}
		if other, ok := seen[abs]; ok {
			return usagef("--%s and --%s both write %s; give each its own file", other, f.flag, f.path)
		}
		seen[abs] = f.flag
		if err := checkDir(f.flag, f.path); err != nil {
			return err
		}
	}
	return nil
}

// checkDir checks that the directory of the file of --flag exists, and
// that the file is not itself a directory (found before the run, not
// after it).
func checkDir(flag, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return usagef("--%s %s: %v", flag, path, err)
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return usagef("--%s %s: is a directory; give a file's name", flag, path)
	}
	if st, err := os.Stat(filepath.Dir(abs)); err != nil || !st.IsDir() {
		return usagef("--%s %s: the directory %s does not exist; create it or write the file elsewhere", flag, path, filepath.Dir(path))
	}
	return nil
}

// parseCases parses "<workload> [flags]" and expands it into cases.
func parseCases(cmd string, args []string, sweep bool) (*options, []experiment.Case, error) {
	o, err := parseArgs(cmd, args)
	if err != nil {
		return nil, nil, err
	}
	cases, err := o.cases(cmd, sweep)
	if err != nil {
		return nil, nil, err
	}
	return o, cases, nil
}

// setFlags lists the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// notApplicable rejects flags that were given but would be ignored with
// the values of the others (a flag the command never takes is not in its
// flag set: commandFlags).
func (o *options) notApplicable(cmd string) error {
	reject := func(name, why string, unless ...bool) error {
		if o.set[name] && !(len(unless) > 0 && unless[0]) {
			return usagef("%s: --%s does not apply: %s", cmd, name, why)
		}
		return nil
	}
	var errs []error
	if len(o.tcp.vals) == 1 && o.tcp.vals[0] == tcpstack.Netemu {
		errs = append(errs, reject("delack", "netemu's TCP delays its own ACKs, as a Linux receiver does; the link's delayed-ACK stage is for --tcp gvisor"))
	}
	switch {
	case cmd == "compare": // it runs both backends
	case o.backend == (experiment.Kernel{}).Name():
		errs = append(errs,
			reject("clock", "kernel TCP runs in real time"),
			reject("seed", "kernel TCP takes no seed; the seed applies to the link's impairments (--loss, --netem, ...)", o.impaired()),
			reject("delack", "kernel TCP delays its own ACKs"),
			reject("tcp", "kernel TCP is Linux's; --tcp picks the emulated hosts' TCP"))
	default:
		errs = append(errs, reject("link", "it picks the kernel backend's link; add --backend kernel"))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// impaired reports whether any impairment flag is given.
func (o *options) impaired() bool {
	for _, name := range []string{"loss", "jitter", "reorder", "duplicate", "corrupt", "netem", "netem-up", "netem-down"} {
		if o.set[name] {
			return true
		}
	}
	return false
}

// parseFlags parses args into fs, with flag's messages in netemu's words;
// workload is the workload whose flags args may hold, "" before its name.
func parseFlags(fs *flag.FlagSet, args []string, workload string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err // the command's help, on stdout
		}
		// flag's messages name the flag: "invalid value "x" for flag -rate: ...".
		msg := strings.Replace(err.Error(), " for flag -", " for --", 1)
		if v, rest, ok := strings.Cut(strings.TrimPrefix(msg, "invalid value "), " for --"); ok && len(v) > 80 {
			msg = fmt.Sprintf("invalid value %.40s…\" (%d bytes) for --%s", v, len(v), rest) // one line, not the whole list
		}
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			if why := notTaken(fs.Name(), name); why != "" {
				return usagef("%s", why)
			}
			msg = "unknown flag --" + name
			if near := nearestFlag(fs, name, workload); near != "" {
				msg += "; did you mean --" + near + "?"
			}
			ks := kindsOfFlag(name)
			who := strings.Join(ks, " and ")
			switch {
			case len(ks) == 0:
			case workload == "" && len(ks) == 1:
				msg = fmt.Sprintf("--%s is a flag of the %s workload; write it after the workload's name", name, who)
			case workload == "":
				msg = fmt.Sprintf("--%s is a flag of the %s workloads; write it after the workload's name", name, who)
			case len(ks) == 1:
				msg = fmt.Sprintf("%s has no --%s; %s has", workload, name, who)
			default:
				msg = fmt.Sprintf("%s has no --%s; %s have", workload, name, who)
			}
		}
		return usagef("%s: %s (see netemu help %s)", fs.Name(), msg, fs.Name())
	}
	return nil
}

// nearestFlag returns the flag whose name is closest to name, a flag
// that does not exist, if it is close enough to be a slip of the fingers
// (--rrt for --rtt, --ratee for --rate): at most one edit for a name of
// up to four letters, two for a longer one, a swap of neighbours
// counting as one. Before a workload's name (workload "") the
// workloads' own flags count too. "" if none is that close.
func nearestFlag(fs *flag.FlagSet, name, workload string) string {
	name, _, _ = strings.Cut(name, "=")
	limit := 1
	if len(name) > 4 {
		limit = 2
	}
	// Between names as close, the one of the typed length wins (--seesd:
	// --seeds, not --seed), then the first in order.
	best, bestD, bestL := "", limit+1, 0
	consider := func(f *flag.Flag) {
		d, l := editDistance(name, f.Name), abs(len(f.Name)-len(name))
		if d < bestD || d == bestD && (l < bestL || l == bestL && f.Name < best) {
			best, bestD, bestL = f.Name, d, l
		}
	}
	fs.VisitAll(consider)
	if workload == "" {
		for _, k := range workloads.Kinds() {
			kfs := flag.NewFlagSet(k.Name, flag.ContinueOnError)
			k.Flags(kfs)
			kfs.VisitAll(consider)
		}
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of neighbours, one each.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// timedKinds names the workloads that time their requests, for messages.
func timedKinds() string {
	var names []string
	for _, k := range workloads.Kinds() {
		ws, err := k.Flags(flag.NewFlagSet(k.Name, flag.ContinueOnError))()
		if err == nil && len(ws) > 0 {
			if _, ok := ws[0].(workloads.Timed); ok {
				names = append(names, k.Name)
			}
		}
	}
	return strings.Join(names, " or ")
}

// drawFigures draws the figures a case's options ask for: --waterfall,
// then --plot, each to its file for variant.
func (o *options) drawFigures(c experiment.Case, r workloads.Result, watch *experiment.Watch, variant string) error {
	if err := o.drawWaterfall(c, r, variant); err != nil {
		return err
	}
	if o.plot == "" {
		return nil
	}
	path := variantPath(o.plot, variant)
	if err := experiment.RunFigure(c, o.backend, r, watch.Timeline()).Save(path); err != nil {
		return err
	}
	o.wrote("plot", path)
	return nil
}

// drawWaterfall draws r's waterfall to --waterfall's file for variant,
// if asked.
func (o *options) drawWaterfall(c experiment.Case, r workloads.Result, variant string) error {
	if o.waterfall == "" {
		return nil
	}
	chart, ok := experiment.WaterfallFigure(fmt.Sprintf("%s: RTT %s, rate %s", experiment.Title(c.Workload), fmtDur(c.RTT()), c.RateLabel()), r)
	if !ok {
		return fmt.Errorf("--waterfall: the run recorded no request timings")
	}
	path := variantPath(o.waterfall, variant)
	if err := chart.Save(path); err != nil {
		return err
	}
	o.wrote("waterfall", path)
	return nil
}

// kindsOfFlag returns the workloads that have flag name.
func kindsOfFlag(name string) []string {
	var names []string
	for _, k := range workloads.Kinds() {
		fs := flag.NewFlagSet(k.Name, flag.ContinueOnError)
		k.Flags(fs)
		if fs.Lookup(name) != nil {
			names = append(names, k.Name)
		}
	}
	return names
}

// maxHandshakeRTT is how long a connect waits for its SYN to be answered:
// an initial timeout of 1 s doubled over 6 retransmissions.
const maxHandshakeRTT = 127 * time.Second

// axis is a list flag that sweeps: its values, how each names a case and
// how it sets a link.
type axis struct {
	name  string
	n     int
	label func(i int) string // "loss 1%", for table cells
	slug  func(i int) string // "loss1pct", for file names
	apply func(i int, c *link.Config)
	// late: apply after the netem lines and the qdiscs, which may set
	// the directions apart (a trace is one direction's).
	late bool
}

// axes are the list flags in the order they vary, outermost first.
func (o *options) axes() []axis {
	pct := func(v float64) string { return strconv.FormatFloat(v*100, 'g', -1, 64) + "%" }
	raw := func(f interface{ rawAt(int) string }, i int) string { return f.rawAt(i) }
	chance := func(name string, f *listFlag[float64], set func(*link.Config, float64)) axis {
		return axis{name, len(f.vals), func(i int) string { return name + " " + pct(f.vals[i]) },
			func(i int) string { return name + strings.ReplaceAll(pct(f.vals[i]), "%", "pct") },
			func(i int, c *link.Config) { set(c, f.vals[i]) }, false}
	}
	return []axis{
		{"rtt", len(o.rtt.vals), func(i int) string { return "rtt " + fmtDur(o.rtt.vals[i]) }, func(i int) string { return "rtt" + raw(o.rtt, i) },
			func(i int, c *link.Config) { c.Delay = o.rtt.vals[i] / 2 }, false},
		{"rate", len(o.rate.vals), func(i int) string { return tc.FormatRate(o.rate.vals[i]) }, func(i int) string { return tc.FormatRate(o.rate.vals[i]) },
			func(i int, c *link.Config) { c.Rate = o.rate.vals[i] }, false},
		{"queue", len(o.queue.vals), func(i int) string { return "queue " + raw(o.queue, i) }, func(i int) string { return "queue" + raw(o.queue, i) },
			func(i int, c *link.Config) { c.Qdisc = link.Qdisc(o.queue.vals[i]) }, false},
		{"qdisc", len(o.qdisc.vals), func(i int) string { return o.qdisc.vals[i].String() }, func(i int) string { return strings.ReplaceAll(o.qdisc.vals[i].String(), " ", "-") },
			func(i int, c *link.Config) { *c = o.qdisc.vals[i].Apply(*c, tc.Both) }, false},
		{"delack", len(o.delack.vals), func(i int) string { return "delack " + fmtDur(o.delack.vals[i]) }, func(i int) string { return "delack" + raw(o.delack, i) },
			func(i int, c *link.Config) { c.DelayedACK = o.delack.vals[i] }, false},
		chance("loss", o.loss, func(c *link.Config, v float64) { c.Loss = link.RandomLoss(v, 0) }),
		{"jitter", len(o.jitter.vals), func(i int) string { return "jitter " + fmtDur(o.jitter.vals[i]) }, func(i int) string { return "jitter" + raw(o.jitter, i) },
			func(i int, c *link.Config) { c.Jitter = o.jitter.vals[i] }, false},
		chance("reorder", o.reorder, func(c *link.Config, v float64) { c.Reorder = link.Chance{P: v} }),
		chance("duplicate", o.duplicate, func(c *link.Config, v float64) { c.Duplicate = link.Chance{P: v} }),
		chance("corrupt", o.corrupt, func(c *link.Config, v float64) { c.Corrupt = link.Chance{P: v} }),
		o.traceAxis("trace-up", o.traceUp, true),
		o.traceAxis("trace-down", o.traceDown, false),
	}
}

// traceAxis is the axis of --trace-up or --trace-down: each value a trace
// file, or none ("").
func (o *options) traceAxis(name string, f *listFlag[*link.Trace], up bool) axis {
	label := func(i int) string {
		if f.vals[i] == nil {
			return ""
		}
		return name + " " + f.vals[i].Name
	}
	return axis{name: name, n: len(f.vals), label: label, slug: func(i int) string { return strings.ReplaceAll(label(i), " ", "-") },
		apply: func(i int, c *link.Config) {
			if t := f.vals[i]; t != nil {
				if o.traceOnce {
					once := *t
					once.Once = true
					t = &once
				}
				dir := link.BtoA
				if up {
					dir = link.AtoB
				}
				*c = c.WithTrace(dir, t)
			}
		}, late: true}
}

// parseTrace reads a --trace-up or --trace-down value: a trace file, or
// "" for none. A file given twice is read once.
func (o *options) parseTrace(path string) (*link.Trace, error) {
	if path == "" {
		return nil, nil
	}
	if t, ok := o.traces[path]; ok {
		return t, nil
	}
	t, err := link.ReadTrace(path)
	var te *link.TraceError
	if errors.As(err, &te) {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "trace "))
	}
	if err != nil {
		return nil, err
	}
	if o.traces == nil {
		o.traces = map[string]*link.Trace{}
	}
	o.traces[path] = t
	return t, nil
}

// inputHashes returns the SHA-256 of each trace the flags read, by path
// as given: what a sweep's results file must agree on besides its
// arguments. The hash is of the trace as mahimahi's format writes it, so
// the same opportunities in another layout hash alike.
func (o *options) inputHashes() map[string]string {
	if len(o.traces) == 0 {
		return nil
	}
	m := make(map[string]string, len(o.traces))
	for path, t := range o.traces {
		h := sha256.New()
		t.WriteTo(h) // a hash.Hash never fails a write
		m[path] = hex.EncodeToString(h.Sum(nil))
	}
	return m
}

// netemOptions are the flags that set what a netem option also sets.
var netemOptions = map[tc.Option]string{tc.Delay: "rtt", tc.Limit: "queue", tc.Rate: "rate", tc.Loss: "loss", tc.Reorder: "reorder", tc.Duplicate: "duplicate", tc.Corrupt: "corrupt", tc.Seed: "seed"}

// withNetem applies the --netem lines to c: the shared one to both
// directions, --netem-up to client→server, --netem-down to server→client.
// An option set both by a flag and by a netem line is a usage error, and
// so is netem's limit with a qdisc that has its own.
func (o *options) withNetem(c link.Config) (link.Config, error) {
	names := []string{"netem", "netem-up", "netem-down"}
	sides := []tc.Side{tc.Both, tc.Up, tc.Down}
	var lines [3]tc.Netem
	for i, line := range o.netem {
		if line == "" {
			continue
		}
		n, err := tc.ParseNetem(line)
		if err != nil {
			return c, usagef("--%s %q: %v", names[i], line, strings.TrimPrefix(err.Error(), "netem: "))
		}
		for _, g := range n.Options() {
			if f, ok := netemOptions[g]; ok && o.set[f] {
				return c, usagef("--%s and --%s's %s both set the %s; give it once", f, names[i], g, g)
			}
			if g == tc.Delay && n.Config().Jitter > 0 && o.set["jitter"] {
				return c, usagef("--jitter and --%s's delay both set the jitter; give it once", names[i])
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
	return usagef("%s and --%s %s both bound the queue; %s has its own limit (limit N): drop %s", other, flag, tc.Qdisc(q), q.Kind, other)
}

// withQdisc checks that a qdisc with a limit of its own (all but the
// FIFO) comes without --queue or netem's limit, and gives the
// server→client direction its own qdisc with --qdisc-down.
func (o *options) withQdisc(c link.Config) (link.Config, error) {
	var down tc.Qdisc
	if o.qdiscDown != "" {
		if strings.Contains(o.qdiscDown, ",") {
			return c, usagef("--qdisc-down %q: takes one queue discipline, not a list; to compare several, list them in --qdisc", o.qdiscDown)
		}
		var err error
		if down, err = tc.ParseQdisc(o.qdiscDown); err != nil {
			return c, usagef("--qdisc-down %q: %v", o.qdiscDown, strings.TrimPrefix(err.Error(), "qdisc "))
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

// cases expands the options into the cases to run: every combination of
// the list flags (sweep), times the workload's variants.
func (o *options) cases(cmd string, sweep bool) ([]experiment.Case, error) {
	axes := o.axes()
	if !sweep {
		if err := o.checkOneValue(cmd, axes); err != nil {
			return nil, err
		}
	}
	o.sweeping = sweep
	impls := o.tcp.vals
	if !sweep {
		impls = impls[:1] // compare runs each TCP of the list itself
	}
	ws, err := o.build()
	if err != nil {
		return nil, usagef("%s %s: %v", cmd, o.kind.Name, err)
	}
	tcp, err := o.tcpConfig()
	if err != nil {
		return nil, err
	}
	clk, err := o.clockMode()
	if err != nil {
		return nil, err
	}
	if _, err := o.newBackend(o.backend); err != nil {
		return nil, err
	}
	if err := o.checkFigures(); err != nil {
		return nil, err
	}
	if err := o.checkNeeds(cmd, clk, ws); err != nil {
		return nil, err
	}
	if o.waterfall != "" {
		if err := timeRequests(ws); err != nil {
			return nil, err
		}
	}
	if err := o.checkMTU(); err != nil {
		return nil, err
	}
	// The cells are counted before any is built: a list too long is
	// refused at once, not after minutes of building.
	if err := checkCells(cmd, len(ws), axes); err != nil {
		return nil, err
	}
	return o.expand(axes, impls, ws, experiment.Case{TCP: tcp, Clock: clk, Seed: o.seed})
}

// checkOneValue refuses, for run, explain and compare, a list flag with
// several values: those are sweep's. A list of queue disciplines is a
// choice between kinds of queue, as a workload's variants are, so they
// take one (a case, a row, a figure per discipline), and compare takes
// a list of TCPs.
func (o *options) checkOneValue(cmd string, axes []axis) error {
	for _, a := range axes {
		if a.n > 1 && a.name != "qdisc" {
			return usagef("%s: --%s has %d values; use netemu sweep for lists", cmd, a.name, a.n)
		}
	}
	if n := len(o.tcp.vals); n > 1 && cmd != "compare" {
		return usagef("%s: --tcp has %d values; use netemu compare to see them side by side, or netemu sweep", cmd, n)
	}
	return nil
}

// checkFigures refuses a --plot or --waterfall file whose name says
// neither SVG nor PNG.
func (o *options) checkFigures() error {
	for _, f := range []struct{ name, path string }{{"plot", o.plot}, {"waterfall", o.waterfall}} {
		if ext := strings.ToLower(filepath.Ext(f.path)); f.path != "" && ext != ".svg" && ext != ".png" {
			return usagef("--%s %s: want a file name ending in .svg or .png", f.name, f.path)
		}
	}
	return nil
}

// timeRequests makes each workload of ws time its requests, for
// --waterfall; a workload that cannot is refused.
func timeRequests(ws []workloads.Workload) error {
	for i, w := range ws {
		t, ok := w.(workloads.Timed)
		if !ok {
			return usagef("--waterfall: the %s workload does not time its requests; want %s", w.Name(), timedKinds())
		}
		ws[i] = t.WithTimings(true)
	}
	return nil
}

// checkCells refuses more than maxCells cells: variants workloads times
// the values of each axis.
func checkCells(cmd string, variants int, axes []axis) error {
	cells, why := variants, []string{}
	if variants > 1 {
		why = append(why, fmt.Sprintf("%d variants", variants))
	}
	for _, a := range axes {
		cells = min(cells*a.n, maxCells+1) // a.n ≤ maxCells: no overflow
		if a.n > 1 {
			why = append(why, fmt.Sprintf("--%s %d", a.name, a.n))
		}
	}
	if cells > maxCells {
		return usagef("%s: %s make more than %d cells, the most a sweep runs; split the study (--shard runs a part) or take fewer values", cmd, strings.Join(why, " × "), maxCells)
	}
	return nil
}

// expand makes the cases of every combination of the axes' values, the
// last axis varying fastest, and, within each link, of every TCP of
// impls and workload of ws, in that order; base gives the TCP's other
// settings, the clock and the seed. A link that is not valid, or whose
// RTT no TCP handshake completes, is refused.
func (o *options) expand(axes []axis, impls []tcpstack.Impl, ws []workloads.Workload, base experiment.Case) ([]experiment.Case, error) {
	var cases []experiment.Case
	idx := make([]int, len(axes))
	for {
		lc, label, err := o.linkAt(axes, idx)
		if err != nil {
			return nil, err
		}
		if err := lc.Validate(); err != nil {
			return nil, usagef("%s: %v", strings.Join(label, ", "), strings.TrimPrefix(err.Error(), "link: "))
		}
		if rtt := (experiment.Case{Link: lc}).RTT(); rtt > maxHandshakeRTT {
			return nil, usagef("an RTT of %v cannot complete a TCP handshake: a connect gives up after %v (the SYN and 6 retransmissions, Linux's and gVisor's default); want an RTT under %v", rtt, maxHandshakeRTT, maxHandshakeRTT)
		}
		for _, impl := range impls {
			tcp := base.TCP
			tcp.Impl = impl
			for _, w := range ws {
				cases = append(cases, experiment.Case{Workload: w, Link: lc, TCP: tcp, Clock: base.Clock, Seed: base.Seed})
			}
		}
		// Next combination: the last axis varies fastest.
		k := len(axes) - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] < axes[k].n {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return cases, nil
		}
	}
}

// parseImpl reads a --tcp value.
func parseImpl(s string) (tcpstack.Impl, error) {
	for _, i := range tcpstack.Impls {
		if s == string(i) {
			return i, nil
		}
	}
	names := make([]string, len(tcpstack.Impls))
	for k, i := range tcpstack.Impls {
		names[k] = string(i)
	}
	return "", fmt.Errorf("%q is not a TCP netemu has; want %s", s, strings.Join(names, " or "))
}

// tcpConfig is the hosts' TCP configuration the options ask for, with
// the first --tcp.
func (o *options) tcpConfig() (tcpstack.TCPConfig, error) {
	tcp := tcpstack.TCPConfig{Impl: o.tcp.vals[0], CongestionControl: tcpstack.CongestionControl(o.cc)}
	if err := tcp.Validate(); err != nil {
		return tcp, usagef("--cc %q: want %s or %s", o.cc, tcpstack.Cubic, tcpstack.Reno)
	}
	return tcp, nil
}

// checkMTU reports an --mtu out of range.
func (o *options) checkMTU() error {
	if o.mtu < link.MinMTU || o.mtu > link.MaxMTU {
		return usagef("--mtu %d: want %d to %d bytes", o.mtu, link.MinMTU, link.MaxMTU)
	}
	return nil
}

// linkAt is the link of one combination of the axes' values (idx[k]
// picks axis k's), with netem and the qdisc applied, and its label;
// the caller validates it.
func (o *options) linkAt(axes []axis, idx []int) (link.Config, []string, error) {
	lc := link.Config{MTU: o.mtu}
	var label []string
	for k, a := range axes {
		if !a.late {
			a.apply(idx[k], &lc)
		}
		if l := a.label(idx[k]); l != "" {
			label = append(label, l)
		}
	}
	if b := lc.Qdisc.LimitBytes; b > 0 && b < o.mtu {
		return lc, nil, usagef("--queue %d bytes: want at least the MTU (%d bytes) so a full packet fits", b, o.mtu)
	}
	lc, err := o.withNetem(lc)
	if err != nil {
		return lc, nil, err
	}
	if lc, err = o.withQdisc(lc); err != nil {
		return lc, nil, err
	}
	for k, a := range axes {
		if a.late {
			a.apply(idx[k], &lc)
		}
	}
	if err := o.checkTraces(); err != nil {
		return lc, nil, err
	}
	return lc, label, nil
}

// checkTraces refuses what a trace makes moot: a netem rate on the
// direction it gives the rate of, --rate when both directions have one,
// --trace-once without a trace.
func (o *options) checkTraces() error {
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
				return usagef("--%s and --%s's rate both set the rate of one direction; give one", c.flag, c.lineFlags[k])
			}
		}
	}
	switch {
	case up && down && o.set["rate"]:
		return usagef("--rate does not apply: --trace-up and --trace-down give both directions' rates")
	case o.traceOnce && !up && !down:
		return usagef("--trace-once does not apply: it plays --trace-up or --trace-down once; give one")
	}
	return nil
}

func (o *options) clockMode() (emu.ClockMode, error) {
	for _, m := range []emu.ClockMode{emu.Virtual, emu.Real} {
		if o.clock == m.String() {
			return m, nil
		}
	}
	return 0, usagef("--clock %q: want %s or %s", o.clock, emu.Virtual, emu.Real)
}

// newBackend returns the backend called name, with --link.
func (o *options) newBackend(name string) (experiment.Backend, error) {
	via := kernel.Via(o.via)
	switch via {
	case kernel.Auto, kernel.TUN, kernel.Netem:
	default:
		return nil, usagef("--link %q: want %s, %s or %s", o.via, kernel.Auto, kernel.TUN, kernel.Netem)
	}
	b, err := experiment.NewBackend(name, experiment.Options{Via: via})
	if err != nil {
		return nil, usagef("--%v", err)
	}
	return b, nil
}

// instruments are the instruments the options ask for on one case of
// several; variant tells their files apart.
func (o *options) instruments(variant string, explain bool) experiment.Instruments {
	return experiment.Instruments{
		Pcap:         variantPath(o.pcap, variant),
		Timeline:     variantPath(o.timeline, variant),
		KeepTimeline: o.plot != "",
		Explain:      explain,
		MMLogUp:      variantPath(o.mmLogUp, variant),
		MMLogDown:    variantPath(o.mmLogDown, variant),
		Command:      commandLine(),
	}
}

// attach readies --pcap and --timeline on c, a case the command runs
// itself (proxy, shell); a file that cannot be created is a usage error.
func (o *options) attach(c *experiment.Case) (*experiment.Watch, error) {
	w, err := experiment.Instruments{Pcap: o.pcap, Timeline: o.timeline, MMLogUp: o.mmLogUp, MMLogDown: o.mmLogDown, Command: commandLine()}.Attach(c)
	return w, outputUsage(err)
}

// outputUsage makes an output file that cannot be created a usage error.
func outputUsage(err error) error {
	var oe *experiment.OutputError
	if errors.As(err, &oe) {
		return usagef("--%s: %v", oe.Instrument, oe.Err)
	}
	return err
}

// measure runs c on backend b with the instruments the options ask for.
// A file that cannot be created and a kernel feature that is missing are
// usage errors.
func (o *options) measure(ctx context.Context, b experiment.Backend, c experiment.Case, variant string, explain bool) (workloads.Result, experiment.Record, *experiment.Watch, error) {
	ins := o.instruments(variant, explain)
	r, rec, w, err := experiment.Measure(ctx, b, c, ins)
	var oe *experiment.OutputError
	if !errors.As(err, &oe) { // the files were made, complete up to the error
		o.wrote("pcap", ins.Pcap)
		o.wrote("timeline", ins.Timeline)
		o.wrote("mm-log-up", ins.MMLogUp)
		o.wrote("mm-log-down", ins.MMLogDown)
	}
	switch {
	case errors.As(err, &oe):
		err = outputUsage(err)
	case errors.Is(err, kernel.ErrUnsupported):
		err = usagef("--backend %s: %v", b.Name(), err)
	case errors.Is(err, errors.ErrUnsupported):
		// A choice the backend's TCP does not have (share --ccs bbr on
		// gVisor): a usage error, named by the workload's error.
		err = usagef("--backend %s: %v", b.Name(), err)
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ETIMEDOUT):
		if why := tooSlow(c); why != "" {
			err = fmt.Errorf("%w: %s", err, why)
		}
	}
	return r, rec, w, err
}

// maxRTO is TCP's longest retransmission timeout (Linux's TCP_RTO_MAX,
// gVisor's MaxRTO).
const maxRTO = 120 * time.Second

// tooSlow explains, in the flags' terms, a connection that TCP gave up on
// because the link is slower than its timers: a full queue takes longer
// to drain than the longest retransmission timeout, so every timeout fires
// before the data's ACK can come back. "" when that is not the case.
func tooSlow(c experiment.Case) string {
	full := c.Link.WithDefaults()
	lc := full
	if lc.BtoA != nil {
		lc = *lc.BtoA
	}
	if lc.Rate == 0 || !lc.Qdisc.IsFIFO() {
		// codel and fq_codel drop once packets wait past their target:
		// their queue does not stay full.
		return ""
	}
	packets, mtu := lc.Qdisc.Limit, full.MTU
	drain := time.Duration(float64(packets*mtu*8) / lc.Rate * float64(time.Second))
	if drain <= maxRTO {
		return ""
	}
	return fmt.Sprintf("the link is too slow for TCP's timers: a full queue of %d packets takes %v to drain at %s, longer than TCP's longest retransmission timeout (%v), so the sender retransmits until it gives up; raise --rate or lower --queue (under %d packets at this rate)",
		packets, drain.Round(time.Second), tc.FormatRate(lc.Rate), maxRTO, int(maxRTO.Seconds()*lc.Rate/float64(mtu*8)))
}

// commandLine is how netemu was run, for the headers of files it writes.
func commandLine() string { return strings.Join(append([]string{"netemu"}, os.Args[1:]...), " ") }
