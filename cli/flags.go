package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
	if n := strings.Count(s, ",") + 1; n > MaxCells {
		return fmt.Errorf("%d values; a sweep has at most %d cells", n, MaxCells)
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

// ParsePercent reads a probability written as a percentage: 1%, 0.5%, 0.
func ParsePercent(what string) func(string) (float64, error) {
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

// Options are the parsed flags of a command. The exported fields are the
// flags a front end reads itself (--json, --seed, ...), as typed or
// parsed; the rest become cases (ParseCases) or a link (RealLink).
type Options struct {
	Clock     string // --clock: virtual or real
	Seed      uint64
	Exact     bool   // --exact: no host noise (experiment.Case.Exact)
	HostNoise string // --host-noise: the nodes' noise, when given, instead of link.DefaultNoise
	MTU       int
	JSON      bool
	Backend   string // --backend's name
	Via       string // --link: kernel mode's way across
	Plot      string // --plot's file
	SeedsFlag string // --seeds as typed
	Jobs      int    // --jobs: a sweep's workers
	Out       string // --out: a sweep's results file
	Resume    bool   // --continue
	ShardFlag string // --shard as typed
	Study     string // the study file's name (--spec), for records
	StudyHash string // its contents' SHA-256, hex

	// ctx ends the reading of input files (--trace-up, --trace-down)
	// early: a signal must not wait for a FIFO's writer. nil never ends.
	ctx       context.Context
	cmd       *Command // the command whose flags these are
	kind      workloads.Kind
	build     func() ([]workloads.Workload, error) // the kind's workloads from its flags
	rtt       *listFlag[time.Duration]
	rate      *listFlag[float64]
	queue     *listFlag[queueSize] // a FIFO's limit
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
	topology  string    // --topology as typed
	accessRTT string    // --access-rtt as typed
	file      *topoFile // --topology's file, read
	topoFS    fs.FS     // where --topology's files are read: nil, the file system
	pcap      string
	timeline  string
	mmLogUp   string
	mmLogDown string
	waterfall string
	set       map[string]bool  // flags given on the command line
	grid      *experiment.Grid // the cases' grid, once cases has made them

	written []writtenFile // the files the command wrote, in order, for announce
}

// writtenFile is a file a command wrote, and the flag that asked for it.
type writtenFile struct{ flag, path string }

// Wrote records that the command wrote path for --flag; "" is no file.
func (o *Options) Wrote(flag, path string) {
	if path != "" {
		o.written = append(o.written, writtenFile{flag, path})
	}
}

// Announce names on stderr every file the command wrote, one line each,
// so that the files a command of several cases writes beside the one
// typed (--plot x.svg: x-fifo.svg, x-codel.svg) are found.
func (o *Options) Announce(stderr io.Writer) {
	for _, f := range o.written {
		fmt.Fprintf(stderr, "netemu: wrote %s (--%s)\n", f.path, f.flag)
	}
	o.written = nil
}

// parseArgs parses command c's "<workload> [flags]": the shared flags
// may come first, the workload's own come after its name.
func parseArgs(ctx context.Context, c *Command, args []string) (*Options, error) {
	return parseArgsIn(ctx, c, args, nil)
}

// parseArgsIn is parseArgs with --topology's files read from fsys where
// it is not nil.
func parseArgsIn(ctx context.Context, c *Command, args []string, fsys fs.FS) (*Options, error) {
	o := &Options{ctx: ctx, topoFS: fsys}
	fs := NewFlagSet(c, o)
	cmd := c.Name
	if err := ParseFlags(fs, args, "", c); err != nil {
		return nil, err
	}
	rest := fs.Args()
	if o.topology != "" && isTopoFile(o.topology) {
		return o, o.fromTopoFile(fs, rest)
	}
	if len(rest) == 0 {
		return nil, Usagef("%s: which workload? want %s", cmd, workloads.Names())
	}
	kind, ok := workloads.Lookup(rest[0])
	if !ok {
		return nil, Usagef("unknown workload %q; want %s", rest[0], workloads.Names())
	}
	o.kind, o.build = kind, kind.Flags(fs)
	if err := ParseFlags(fs, rest[1:], kind.Name, c); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		args := rest[1:]
		if i := len(args) - fs.NArg(); i > 0 && (fs.Arg(0) == "true" || fs.Arg(0) == "false") {
			// "--timings true": a switch takes no separate value.
			if name := strings.TrimLeft(args[i-1], "-"); strings.HasPrefix(args[i-1], "-") && fs.Lookup(name) != nil {
				if b, ok := fs.Lookup(name).Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
					return nil, Usagef("%s: --%s is a switch: write --%s alone to turn it on, or --%s=%s", cmd, name, name, name, fs.Arg(0))
				}
			}
		}
		return nil, Usagef("%s: unexpected argument %q; flags look like --rtt 50ms", cmd, fs.Arg(0))
	}
	o.set = setFlags(fs)
	if err := o.NotApplicable(); err != nil {
		return nil, err
	}
	if err := o.CheckOutputs(); err != nil {
		return nil, err
	}
	return o, nil
}

// notes are one-line remarks on what was typed that is valid but easy to
// misread, for stderr.
func (o *Options) notes() []string {
	var out []string
	for _, n := range o.TableNotes() {
		out = append(out, "note: --rate "+n)
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
	if o.set["jobs"] && o.Jobs > AvailableCPUs() {
		out = append(out, fmt.Sprintf("note: --jobs %d is more than the %d CPUs this process may use; a worker keeps about one core busy, so the workers beyond %d take turns and the sweep is no faster", o.Jobs, AvailableCPUs(), AvailableCPUs()))
	}
	return out
}

// TableNotes are the notes a table of the run says on its first line
// too: a --rate in bytes per second, as tc reads "Mbps", which is most
// likely meant as bits ("10Mbps is 80 Mbit/s in tc's units; did you
// mean 10mbit?").
func (o *Options) TableNotes() []string {
	var out []string
	for _, r := range o.rate.raw {
		if l := strings.ToLower(r); strings.HasSuffix(l, "bps") && l != "0" {
			v, _ := tc.ParseRate(r)
			out = append(out, fmt.Sprintf("%s is %s in tc's units (bytes per second); did you mean %sbit?", r, bitsLabel(v), strings.TrimSuffix(l, "bps")))
		}
	}
	return out
}

// bitsLabel writes a rate in bits per second as people say it: "80 Mbit/s".
func bitsLabel(v float64) string {
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if v >= u.scale {
			return strconv.FormatFloat(v/u.scale, 'g', 6, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(v, 'g', 6, 64) + " bit/s"
}

// netemLeavesOut is a note for netem lines that set no delay or no rate
// for a direction while --rtt or --rate is not given either: netemu's
// defaults fill in (50 ms, 10mbit) where tc's netem would add no delay
// and no rate limit. "" when there is nothing to say.
func (o *Options) netemLeavesOut() string {
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

// PrintNotes writes the notes to stderr.
func (o *Options) PrintNotes(stderr io.Writer) {
	for _, n := range o.notes() {
		fmt.Fprintf(stderr, "netemu: %s\n", n)
	}
}

// CheckOutputs checks the output files before anything runs: each names
// a directory that exists, and no two name the same file.
func (o *Options) CheckOutputs() error {
	seen := map[string]string{}
	for _, f := range []struct{ flag, path string }{{"pcap", o.pcap}, {"timeline", o.timeline}, {"mm-log-up", o.mmLogUp}, {"mm-log-down", o.mmLogDown}, {"plot", o.Plot}, {"waterfall", o.waterfall}} {
		if f.path == "" {
			continue
		}
		abs, err := filepath.Abs(f.path)
		if err != nil {
			return Usagef("--%s %s: %v", f.flag, f.path, err)
		}
		if other, ok := seen[abs]; ok {
			return Usagef("--%s and --%s both write %s; give each its own file", other, f.flag, f.path)
		}
		seen[abs] = f.flag
		if err := CheckDir(f.flag, f.path); err != nil {
			return err
		}
	}
	return nil
}

// CheckDir checks that the directory of the file of --flag exists, and
// that the file is not itself a directory (found before the run, not
// after it).
func CheckDir(flag, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Usagef("--%s %s: %v", flag, path, err)
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return Usagef("--%s %s: is a directory; give a file's name", flag, path)
	}
	if st, err := os.Stat(filepath.Dir(abs)); err != nil || !st.IsDir() {
		return Usagef("--%s %s: the directory %s does not exist; create it or write the file elsewhere", flag, path, filepath.Dir(path))
	}
	return nil
}

// ParseCases parses command c's "<workload> [flags]" and expands it into
// cases; ctx ends the reading of the trace files the flags name early.
func ParseCases(ctx context.Context, c *Command, args []string) (*Options, []experiment.Case, error) {
	return parseCasesIn(ctx, c, args, nil)
}

// parseCasesIn is ParseCases with --topology's files read from fsys
// where it is not nil.
func parseCasesIn(ctx context.Context, c *Command, args []string, fsys fs.FS) (*Options, []experiment.Case, error) {
	o, err := parseArgsIn(ctx, c, args, fsys)
	if err != nil {
		return nil, nil, err
	}
	cases, err := o.cases()
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

// NotApplicable rejects flags that were given but would be ignored with
// the values of the others (a flag the command never takes is not in its
// flag set: its Rules).
func (o *Options) NotApplicable() error {
	cmd := o.cmd.Name
	reject := func(name, why string, unless ...bool) error {
		if o.set[name] && !(len(unless) > 0 && unless[0]) {
			return Usagef("%s: --%s does not apply: %s", cmd, name, why)
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
	// A topology's links run through TUN devices in kernel mode; tc
	// netem joins two namespaces only.
	errs = append(errs, reject("link", "a topology's links run through TUN devices in kernel mode; tc netem joins two namespaces only: give --link tun or auto", o.topology == "" || o.Via != string(kernel.Netem)))
	switch {
	case o.cmd.BothBackends:
	case o.Backend == (experiment.Kernel{}).Name():
		errs = append(errs,
			reject("clock", "kernel TCP runs in real time"),
			reject("exact", "kernel TCP's hosts take the time they take"),
			reject("host-noise", "kernel TCP's hosts take the time they take"),
			reject("seed", "kernel TCP takes no seed; the seed applies to the link's impairments (--loss, --netem, ...)", o.Impaired()),
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

// Impaired reports whether any impairment flag is given.
func (o *Options) Impaired() bool {
	for _, name := range []string{"loss", "jitter", "reorder", "duplicate", "corrupt", "netem", "netem-up", "netem-down"} {
		if o.set[name] {
			return true
		}
	}
	return false
}

// ParseFlags parses args into fs, with flag's messages in netemu's words;
// workload is the workload whose flags args may hold, "" before its name;
// c, if not nil, is the command whose Rules word the shared flags it
// refuses.
func ParseFlags(fs *flag.FlagSet, args []string, workload string, c *Command) error {
	counts := countFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err // the command's help, on stdout
		}
		if why := parseError(fs, err); why != "" {
			return Usagef("%s: %s", fs.Name(), why)
		}
		// flag's messages name the flag: "invalid value "x" for flag -rate: ...".
		msg := strings.Replace(err.Error(), " for flag -", " for --", 1)
		if v, rest, ok := strings.Cut(strings.TrimPrefix(msg, "invalid value "), " for --"); ok && len(v) > 80 {
			msg = fmt.Sprintf("invalid value %.40s…\" (%d bytes) for --%s", v, len(v), rest) // one line, not the whole list
		}
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			if why := notTaken(c, name); why != "" {
				return Usagef("%s", why)
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
		return Usagef("%s: %s (see netemu help %s)", fs.Name(), msg, fs.Name())
	}
	return counts.twice(fs, c)
}

// flagParseError matches flag's message for a value its own types (a
// switch, a number, a duration) cannot read.
var flagParseError = regexp.MustCompile(`^invalid (boolean )?value "(.*)" for (?:flag )?-([^:]+): (parse error|value out of range)$`)

// parseError words flag's refusal of a value of its own types as what
// would work: "" for any other error.
func parseError(fs *flag.FlagSet, err error) string {
	m := flagParseError.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	val, name := m[2], m[3]
	f := fs.Lookup(name)
	if f == nil {
		return ""
	}
	if m[1] != "" {
		return fmt.Sprintf("--%s=%s: --%s is a switch: write --%s alone to turn it on, or --%s=false", name, val, name, name, name)
	}
	inner := f.Value
	if c, ok := inner.(*countedValue); ok {
		inner = c.Value
	}
	switch t := fmt.Sprintf("%T", inner); {
	case strings.Contains(t, "uint"):
		return fmt.Sprintf("--%s %q: want a whole number of 0 or more, like %s", name, val, f.DefValue)
	case strings.Contains(t, "int"):
		return fmt.Sprintf("--%s %q: want a whole number, like %s", name, val, f.DefValue)
	case strings.Contains(t, "duration"):
		return fmt.Sprintf("--%s %q: want a duration, like 50ms or 1.5s", name, val)
	case strings.Contains(t, "float"):
		return fmt.Sprintf("--%s %q: want a number, like %s", name, val, f.DefValue)
	}
	return ""
}

// A countedValue is a flag's value that counts how often it is set.
type countedValue struct {
	flag.Value
	raw []string // each value given, as typed
}

func (v *countedValue) Set(s string) error {
	v.raw = append(v.raw, s)
	return v.Value.Set(s)
}

// countedBool is a countedValue of a switch.
type countedBool struct{ *countedValue }

func (countedBool) IsBoolFlag() bool { return true }

// flagCounts are the counted values of a flag set, by name.
type flagCounts map[string]*countedValue

// countFlags makes every flag of fs count how often it is set (once:
// a flag set parsed twice, before and after a workload's name, keeps its
// counts) and returns the counts.
func countFlags(fs *flag.FlagSet) flagCounts {
	counts := flagCounts{}
	fs.VisitAll(func(f *flag.Flag) {
		switch v := f.Value.(type) {
		case *countedValue:
			counts[f.Name] = v
		case countedBool:
			counts[f.Name] = v.countedValue
		default:
			cv := &countedValue{Value: v}
			counts[f.Name] = cv
			if b, ok := v.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				f.Value = countedBool{cv}
			} else {
				f.Value = cv
			}
		}
	})
	return counts
}

// twice refuses a flag given more than once, which flag would take as
// its last value without a word; command c's Repeatable flags may be.
func (counts flagCounts) twice(fs *flag.FlagSet, c *Command) error {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	for _, name := range names {
		v := counts[name]
		if v == nil || len(v.raw) < 2 || c != nil && slices.Contains(c.Repeatable, name) {
			continue
		}
		if _, ok := fs.Lookup(name).Value.(countedBool); ok {
			return Usagef("%s: --%s is given %d times; give it once", fs.Name(), name, len(v.raw))
		}
		if _, list := v.Value.(interface{ rawAt(int) string }); list {
			return Usagef("%s: --%s is given %d times (%s); give it once, or a list to sweep: --%s %s", fs.Name(), name, len(v.raw), strings.Join(v.raw, ", then "), name, strings.Join(v.raw, ","))
		}
		return Usagef("%s: --%s is given %d times (%s); give it once", fs.Name(), name, len(v.raw), strings.Join(v.raw, ", then "))
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

// DrawFigures draws the figures a case's options ask for: --waterfall,
// then --plot, each to its file for variant.
func (o *Options) DrawFigures(c experiment.Case, r workloads.Result, watch *experiment.Watch, variant string) error {
	if err := o.drawWaterfall(c, r, variant); err != nil {
		return err
	}
	if o.Plot == "" {
		return nil
	}
	path := VariantPath(o.Plot, variant)
	if err := experiment.RunFigure(c, o.Backend, r, watch.Timeline()).Save(path); err != nil {
		return err
	}
	o.Wrote("plot", path)
	return nil
}

// drawWaterfall draws r's waterfall to --waterfall's file for variant,
// if asked.
func (o *Options) drawWaterfall(c experiment.Case, r workloads.Result, variant string) error {
	if o.waterfall == "" {
		return nil
	}
	chart, ok := experiment.WaterfallFigure(fmt.Sprintf("%s: RTT %s, rate %s", experiment.Title(c.Workload), fmtDur(c.RTT()), c.RateLabel()), r)
	if !ok {
		return fmt.Errorf("--waterfall: the run recorded no request timings")
	}
	path := VariantPath(o.waterfall, variant)
	if err := chart.Save(path); err != nil {
		return err
	}
	o.Wrote("waterfall", path)
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
func (o *Options) parseTrace(path string) (*link.Trace, error) {
	if path == "" {
		return nil, nil
	}
	if t, ok := o.traces[path]; ok {
		return t, nil
	}
	t, err := ReadTrace(o.ctx, path)
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

// ReadTrace reads the trace file path until ctx ends (nil: never).
// Opening a FIFO that has no writer, or reading a pipe that stays
// silent, blocks in the kernel, where nothing ends it; so the file is
// read on a goroutine of its own, which outlives an early return until a
// writer comes, the pipe's writer closes it or the process exits.
func ReadTrace(ctx context.Context, path string) (*link.Trace, error) {
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

// InputHashes returns the SHA-256 of each trace the flags read, by path
// as given: what a sweep's results file must agree on besides its
// arguments. The hash is of the trace as mahimahi's format writes it, so
// the same opportunities in another layout hash alike.
func (o *Options) InputHashes() map[string]string {
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
func (o *Options) checkFigures() error {
	for _, f := range []struct{ name, path string }{{"plot", o.Plot}, {"waterfall", o.waterfall}} {
		if ext := strings.ToLower(filepath.Ext(f.path)); f.path != "" && ext != ".svg" && ext != ".png" {
			return Usagef("--%s %s: want a file name ending in .svg or .png", f.name, f.path)
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
			return Usagef("--waterfall: the %s workload does not time its requests; want %s", w.Name(), timedKinds())
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

// TCPConfig is the hosts' TCP configuration the options ask for, with
// the first --tcp.
func (o *Options) TCPConfig() (tcpstack.TCPConfig, error) {
	tcp := tcpstack.TCPConfig{Impl: o.tcp.vals[0], CongestionControl: tcpstack.CongestionControl(o.cc)}
	if o.Backend == (experiment.Kernel{}).Name() && !o.cmd.BothBackends {
		// Kernel TCP runs what the kernel has, listed or not in
		// netemu's registry.
		if err := (kernel.Config{CongestionControl: tcp.CongestionControl}).Validate(); err != nil {
			return tcp, Usagef("--cc %q: %s", o.cc, strings.TrimPrefix(err.Error(), "kernel: "))
		}
		return tcp, nil
	}
	if err := tcp.Validate(); err != nil {
		return tcp, Usagef("--cc %q: want %s", o.cc, tcp.Impl.CongestionControlChoices())
	}
	return tcp, nil
}

// CheckMTU reports an --mtu out of range.
func (o *Options) CheckMTU() error {
	if o.MTU < link.MinMTU || o.MTU > link.MaxMTU {
		return Usagef("--mtu %d: want %d to %d bytes", o.MTU, link.MinMTU, link.MaxMTU)
	}
	return nil
}

func (o *Options) ClockMode() (emu.ClockMode, error) {
	for _, m := range []emu.ClockMode{emu.Virtual, emu.Real} {
		if o.Clock == m.String() {
			return m, nil
		}
	}
	return 0, Usagef("--clock %q: want %s or %s", o.Clock, emu.Virtual, emu.Real)
}

// NewBackend returns the backend called name, with --link.
func (o *Options) NewBackend(name string) (experiment.Backend, error) {
	via := kernel.Via(o.Via)
	switch via {
	case kernel.Auto, kernel.TUN, kernel.Netem:
	default:
		return nil, Usagef("--link %q: want %s, %s or %s", o.Via, kernel.Auto, kernel.TUN, kernel.Netem)
	}
	b, err := experiment.NewBackend(name, experiment.Options{Via: via})
	if err != nil {
		return nil, Usagef("--%v", err)
	}
	return b, nil
}

// instruments are the instruments the options ask for on one case of
// several; variant tells their files apart.
func (o *Options) instruments(variant string, explain bool) experiment.Instruments {
	return experiment.Instruments{
		Pcap:         VariantPath(o.pcap, variant),
		Timeline:     VariantPath(o.timeline, variant),
		KeepTimeline: o.Plot != "",
		Explain:      explain,
		MMLogUp:      VariantPath(o.mmLogUp, variant),
		MMLogDown:    VariantPath(o.mmLogDown, variant),
		Command:      commandLine(),
	}
}

// Attach readies --pcap and --timeline on c, a case the command runs
// itself (proxy, shell); a file that cannot be created is a usage error.
func (o *Options) Attach(c *experiment.Case) (*experiment.Watch, error) {
	w, err := experiment.Instruments{Pcap: o.pcap, Timeline: o.timeline, MMLogUp: o.mmLogUp, MMLogDown: o.mmLogDown, Command: commandLine()}.Attach(c)
	if err == nil { // the files are made: Announce names them
		for _, f := range []writtenFile{{"pcap", o.pcap}, {"timeline", o.timeline}, {"mm-log-up", o.mmLogUp}, {"mm-log-down", o.mmLogDown}} {
			o.Wrote(f.flag, f.path)
		}
	}
	return w, outputUsage(err)
}

// outputUsage makes an output file that cannot be created a usage error.
func outputUsage(err error) error {
	var oe *experiment.OutputError
	if errors.As(err, &oe) {
		return Usagef("--%s: %v", oe.Instrument, oe.Err)
	}
	return err
}

// Measure runs c on backend b with the instruments the options ask for.
// A file that cannot be created and a kernel feature that is missing are
// usage errors.
func (o *Options) Measure(ctx context.Context, b experiment.Backend, c experiment.Case, variant string, explain bool) (workloads.Result, experiment.Record, *experiment.Watch, error) {
	ins := o.instruments(variant, explain)
	r, rec, w, err := experiment.Measure(ctx, b, c, ins)
	var oe *experiment.OutputError
	var we *experiment.WriteError
	if !errors.As(err, &oe) { // the files were made, complete up to the error
		errors.As(err, &we)
		for _, f := range []writtenFile{{"pcap", ins.Pcap}, {"timeline", ins.Timeline}, {"mm-log-up", ins.MMLogUp}, {"mm-log-down", ins.MMLogDown}} {
			if we == nil || !we.Failed(f.flag) { // a file that failed is gone
				o.Wrote(f.flag, f.path)
			}
		}
	}
	switch {
	case errors.As(err, &oe):
		err = outputUsage(err)
	case errors.Is(err, kernel.ErrUnsupported):
		err = Usagef("--backend %s: %v", b.Name(), err)
	case errors.Is(err, errors.ErrUnsupported):
		// A choice the backend's TCP does not have (share --ccs bbr on
		// gVisor): a usage error, named by the workload's error.
		err = Usagef("--backend %s: %v", b.Name(), err)
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ETIMEDOUT):
		if slow, ok := experiment.TooSlow(c); ok {
			err = fmt.Errorf("%w: %s; raise --rate or lower --queue (under %d packets at this rate)", err, slow, slow.MaxPackets)
		}
	}
	return r, rec, w, err
}

// commandLine is how netemu was run, for the headers of files it writes.
func commandLine() string { return strings.Join(append([]string{"netemu"}, os.Args[1:]...), " ") }

// Given reports whether --name was given on the command line.
func (o *Options) Given(name string) bool { return o.set[name] }

// Kind is the workload's kind the arguments named.
func (o *Options) Kind() workloads.Kind { return o.kind }

// Grid is the cases' grid, once ParseCases has made them.
func (o *Options) Grid() *experiment.Grid { return o.grid }

// TCPs are the emulated hosts' TCPs of --tcp, in its order.
func (o *Options) TCPs() []tcpstack.Impl { return o.tcp.vals }

// TCPList is --tcp as typed.
func (o *Options) TCPList() string { return o.tcp.String() }

// Parse parses args into fs, a flag set of NewFlagSet with the
// command's own flags added, for a command that takes no workload
// (proxy, shell, toxiproxy, reproduce), and refuses the flags given that
// do not apply with the others.
func (o *Options) Parse(fs *flag.FlagSet, args []string) error {
	if err := ParseFlags(fs, args, "", o.cmd); err != nil {
		return err
	}
	o.set = setFlags(fs)
	return nil
}

// RealLink is the one link the flags describe for a command that
// carries real programs in real time (proxy, shell, toxiproxy), and the
// hosts' TCP: a clock other than real is refused, with clockWhy the
// reason, and so is a list.
func (o *Options) RealLink(clockWhy string) (link.Config, tcpstack.TCPConfig, error) {
	cmd := o.cmd.Name
	var lc link.Config
	if o.set["clock"] && o.Clock != emu.Real.String() {
		return lc, tcpstack.TCPConfig{}, Usagef("%s: --clock %s does not apply: real programs run in real time, so %s", cmd, o.Clock, clockWhy)
	}
	if err := o.CheckMTU(); err != nil {
		return lc, tcpstack.TCPConfig{}, err
	}
	axes := o.gridAxes()
	for _, a := range axes {
		if a.N > 1 {
			return lc, tcpstack.TCPConfig{}, Usagef("%s: --%s has %d values; it runs one link", cmd, a.Name, a.N)
		}
	}
	g := experiment.Grid{Axes: axes, Shape: o.shape, Case: experiment.Case{Link: link.Config{MTU: o.MTU}}}
	lc, err := g.LinkAt(make([]int, len(axes)))
	if err != nil {
		return lc, tcpstack.TCPConfig{}, err
	}
	if err := lc.Validate(); err != nil {
		return lc, tcpstack.TCPConfig{}, Usagef("%s: %v", cmd, strings.TrimPrefix(err.Error(), "link: "))
	}
	tcp, err := o.TCPConfig()
	return lc, tcp, err
}

// NewOptions returns the options of a command that takes no workload,
// for NewFlagSet and Parse; ctx ends the reading of its input files
// early.
func NewOptions(ctx context.Context) *Options { return &Options{ctx: ctx} }
