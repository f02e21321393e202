package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
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

func (f *listFlag[T]) Set(s string) error {
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

// queueLimit is a parsed --queue: packets or bytes, the other zero.
type queueLimit struct{ packets, bytes int }

func parseQueue(s string) (queueLimit, error) {
	p, b, err := link.ParseQueue(s)
	return queueLimit{p, b}, err
}

// options are the parsed flags of a command.
type options struct {
	kind     workloads.Kind
	build    func() ([]workloads.Workload, error) // the kind's workloads from its flags
	rtt      *listFlag[time.Duration]
	rate     *listFlag[float64]
	queue    *listFlag[queueLimit]
	delack   *listFlag[time.Duration]
	cc       string
	clock    string
	seed     uint64
	mtu      int
	json     bool
	backend  string
	via      string
	pcap     string
	timeline string
	plot     string
	set      map[string]bool // flags given on the command line
}

func newFlagSet(name string, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.rtt = newList(fs, "rtt", "50ms", "round-trip time (each direction gets half)", parseDuration("RTT"))
	o.rate = newList(fs, "rate", "10mbit", "bottleneck rate in tc units: bit kbit mbit gbit (bits/s), bps kbps mbps gbps (bytes/s); 0 or unlimited", link.ParseRate)
	o.queue = newList(fs, "queue", "1000", "drop-tail queue per direction: packets (1000) or bytes (150KB)", parseQueue)
	o.delack = newList(fs, "delack", "40ms", "Linux-style delayed ACK at the link; 0 disables", parseDuration("delayed-ACK timer"))
	fs.StringVar(&o.cc, "cc", string(tcpstack.Cubic), "congestion control of both hosts: cubic or reno")
	fs.StringVar(&o.clock, "clock", emu.Virtual.String(), "virtual: deterministic and fast; real: wall clock")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of all randomness")
	fs.IntVar(&o.mtu, "mtu", link.DefaultMTU, "link and NIC MTU in bytes")
	fs.BoolVar(&o.json, "json", false, "one JSON object per case (JSON lines) instead of a table")
	fs.StringVar(&o.backend, "backend", experiment.Emulated{}.Name(), "where TCP runs: "+experiment.BackendNames())
	fs.StringVar(&o.via, "link", string(kernel.Auto), "kernel backend's link: auto, tun or netem")
	fs.StringVar(&o.pcap, "pcap", "", "write every packet crossing the link to this pcap file")
	fs.StringVar(&o.timeline, "timeline", "", "write TCP state and queue occupancy over time to this CSV file")
	fs.StringVar(&o.plot, "plot", "", "draw the run to this .svg or .png file")
	return fs
}

// parseArgs parses "<workload> [flags]": the shared flags may come first,
// the workload's own come after its name.
func parseArgs(cmd string, args []string) (*options, error) {
	o := &options{}
	fs := newFlagSet(cmd, o)
	if err := parseFlags(fs, args); err != nil {
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
	if err := parseFlags(fs, rest[1:]); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usagef("%s: unexpected argument %q; flags look like --rtt 50ms", cmd, fs.Arg(0))
	}
	o.set = setFlags(fs)
	if err := o.notApplicable(cmd); err != nil {
		return nil, err
	}
	return o, nil
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

// notApplicable rejects flags that were given but would be ignored.
func (o *options) notApplicable(cmd string) error {
	reject := func(name, why string) error {
		if o.set[name] {
			return usagef("%s: --%s does not apply: %s", cmd, name, why)
		}
		return nil
	}
	var errs []error
	if cmd == "compare" {
		errs = append(errs,
			reject("backend", "compare runs both backends"),
			reject("clock", "compare runs the emulator on the virtual clock and kernel TCP in real time"))
	} else if o.backend == (experiment.Kernel{}).Name() {
		errs = append(errs,
			reject("clock", "kernel TCP runs in real time"),
			reject("seed", "kernel TCP takes no seed"),
			reject("delack", "kernel TCP delays its own ACKs"))
	} else {
		errs = append(errs, reject("link", "it picks the kernel backend's link; add --backend kernel"))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// parseFlags parses args into fs, with flag's messages in netemu's words.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		// flag's messages name the flag: "invalid value "x" for flag -rate: ...".
		msg := strings.Replace(err.Error(), " for flag -", " for --", 1)
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			msg = "unknown flag --" + name
			if k, ok := kindOfFlag(name); ok {
				msg = fmt.Sprintf("--%s is a flag of the %s workload; write it after the workload's name", name, k)
			}
		}
		return usagef("%s: %s (see netemu help %s)", fs.Name(), msg, fs.Name())
	}
	return nil
}

// kindOfFlag returns the workload that has flag name, if one has.
func kindOfFlag(name string) (string, bool) {
	for _, k := range workloads.Kinds() {
		fs := flag.NewFlagSet(k.Name, flag.ContinueOnError)
		k.Flags(fs)
		if fs.Lookup(name) != nil {
			return k.Name, true
		}
	}
	return "", false
}

// cases expands the options into the cases to run: every combination of
// the list flags (sweep), times the workload's variants.
func (o *options) cases(cmd string, sweep bool) ([]experiment.Case, error) {
	if !sweep {
		for _, f := range []struct {
			name string
			n    int
		}{{"rtt", len(o.rtt.vals)}, {"rate", len(o.rate.vals)}, {"queue", len(o.queue.vals)}, {"delack", len(o.delack.vals)}} {
			if f.n > 1 {
				return nil, usagef("%s: --%s has %d values; use netemu sweep for lists", cmd, f.name, f.n)
			}
		}
	}
	ws, err := o.build()
	if err != nil {
		return nil, usagef("%s %s: %v", cmd, o.kind.Name, err)
	}
	tcp := tcpstack.TCPConfig{CongestionControl: tcpstack.CongestionControl(o.cc)}
	if err := tcp.Validate(); err != nil {
		return nil, usagef("--cc %q: want %s or %s", o.cc, tcpstack.Cubic, tcpstack.Reno)
	}
	clk, err := o.clockMode()
	if err != nil {
		return nil, err
	}
	if _, err := o.newBackend(o.backend); err != nil {
		return nil, err
	}
	if o.plot != "" {
		if ext := strings.ToLower(filepath.Ext(o.plot)); ext != ".svg" && ext != ".png" {
			return nil, usagef("--plot %s: want a file name ending in .svg or .png", o.plot)
		}
	}
	if o.mtu < link.MinMTU || o.mtu > link.MaxMTU {
		return nil, usagef("--mtu %d: want %d to %d bytes", o.mtu, link.MinMTU, link.MaxMTU)
	}
	var cases []experiment.Case
	for _, rtt := range o.rtt.vals {
		for _, rate := range o.rate.vals {
			for qi, q := range o.queue.vals {
				for _, da := range o.delack.vals {
					if q.bytes > 0 && q.bytes < o.mtu {
						return nil, usagef("--queue %s: want at least the MTU (%d bytes) so a full packet fits", o.queue.raw[qi], o.mtu)
					}
					lc := link.Config{Delay: rtt / 2, Rate: rate, QueuePackets: q.packets, QueueBytes: q.bytes, MTU: o.mtu, DelayedACK: da}
					if err := lc.Validate(); err != nil {
						return nil, usagef("%v", err)
					}
					for _, w := range ws {
						cases = append(cases, experiment.Case{Workload: w, Link: lc, TCP: tcp, Clock: clk, Seed: o.seed})
					}
				}
			}
		}
	}
	return cases, nil
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
	}
}

// measure runs c on backend b with the instruments the options ask for.
// A file that cannot be created and a kernel feature that is missing are
// usage errors.
func (o *options) measure(ctx context.Context, b experiment.Backend, c experiment.Case, variant string, explain bool) (workloads.Result, experiment.Record, *experiment.Watch, error) {
	r, rec, w, err := experiment.Measure(ctx, b, c, o.instruments(variant, explain))
	var oe *experiment.OutputError
	switch {
	case errors.As(err, &oe):
		err = usagef("--%s: %v", oe.Instrument, oe.Err)
	case errors.Is(err, kernel.ErrUnsupported):
		err = usagef("--backend %s: %v", b.Name(), err)
	}
	return r, rec, w, err
}
