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
	// ctx ends the reading of input files (--trace-up, --trace-down)
	// early: a signal must not wait for a FIFO's writer. nil never ends.
	ctx       context.Context
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
	set       map[string]bool  // flags given on the command line
	grid      *experiment.Grid // the cases' grid, once cases has made them

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
func parseArgs(ctx context.Context, cmd string, args []string) (*options, error) {
	o := &options{ctx: ctx}
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
func parseCases(ctx context.Context, cmd string, args []string, sweep bool) (*options, []experiment.Case, error) {
	o, err := parseArgs(ctx, cmd, args)
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
	// netemu's TCP runs without the link's delayed-ACK stage: a --delack
	// it alone would ignore is refused (0, the stage off, is what it
	// runs), and so is a list, whose netemu cases would all be one case.
	if slices.Contains(o.tcp.vals, tcpstack.Netemu) {
		stage := slices.ContainsFunc(o.delack.vals, func(d time.Duration) bool { return d != 0 })
		switch {
		case len(o.tcp.vals) == 1:
			errs = append(errs, reject("delack", "netemu's TCP delays its own ACKs, as a Linux receiver does; the link's delayed-ACK stage is for --tcp gvisor", !stage))
		case len(o.delack.vals) > 1:
			errs = append(errs, reject("delack", "netemu's TCP runs without the link's delayed-ACK stage, so its cases of a --delack list would all be one; sweep --delack with --tcp gvisor alone"))
		}
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

// parseTrace reads a --trace-up or --trace-down value: a trace file, or
// "" for none. A file given twice is read once.
func (o *options) parseTrace(path string) (*link.Trace, error) {
	if path == "" {
		return nil, nil
	}
	if t, ok := o.traces[path]; ok {
		return t, nil
	}
	t, err := readTrace(o.ctx, path)
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

// readTrace reads the trace file path until ctx ends (nil: never).
// Opening a FIFO that has no writer, or reading a pipe that stays
// silent, blocks in the kernel, where nothing ends it; so the file is
// read on a goroutine of its own, which outlives an early return until a
// writer comes, the pipe's writer closes it or the process exits.
func readTrace(ctx context.Context, path string) (*link.Trace, error) {
	if ctx == nil || ctx.Done() == nil {
		return link.ReadTrace(path)
	}
	type read struct {
		t   *link.Trace
		err error
	}
	done := make(chan read, 1) // the goroutine never waits to hand it over
	go func() {
		t, err := link.ReadTrace(path)
		done <- read{t, err}
	}()
	select {
	case r := <-done:
		return r.t, r.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
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
	var we *experiment.WriteError
	if !errors.As(err, &oe) { // the files were made, complete up to the error
		errors.As(err, &we)
		for _, f := range []writtenFile{{"pcap", ins.Pcap}, {"timeline", ins.Timeline}, {"mm-log-up", ins.MMLogUp}, {"mm-log-down", ins.MMLogDown}} {
			if we == nil || !we.Failed(f.flag) { // a file that failed is gone
				o.wrote(f.flag, f.path)
			}
		}
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
		if slow, ok := experiment.TooSlow(c); ok {
			err = fmt.Errorf("%w: %s; raise --rate or lower --queue (under %d packets at this rate)", err, slow, slow.MaxPackets)
		}
	}
	return r, rec, w, err
}

// commandLine is how netemu was run, for the headers of files it writes.
func commandLine() string { return strings.Join(append([]string{"netemu"}, os.Args[1:]...), " ") }
