package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

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

// count and flagName let run check every list flag for several values.
func (f *listFlag[T]) count() int       { return len(f.vals) }
func (f *listFlag[T]) flagName() string { return f.name }

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

// options are the parsed flags of run and sweep.
type options struct {
	workload string
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

	resources, conns, requests, rounds int
	total, size                        string
	mode, nodelay, write               string
}

func newFlagSet(name string, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.rtt = newList(fs, "rtt", "50ms", "round-trip time", parseDuration("RTT"))
	o.rate = newList(fs, "rate", "10mbit", "bottleneck rate", link.ParseRate)
	o.queue = newList(fs, "queue", "1000", "queue limit", parseQueue)
	o.delack = newList(fs, "delack", "40ms", "delayed-ACK timer", parseDuration("delayed-ACK timer"))
	fs.StringVar(&o.cc, "cc", tcpstack.Cubic, "congestion control")
	fs.StringVar(&o.clock, "clock", "virtual", "clock")
	fs.Uint64Var(&o.seed, "seed", 1, "seed")
	fs.IntVar(&o.mtu, "mtu", 1500, "MTU")
	fs.BoolVar(&o.json, "json", false, "JSON lines")
	fs.StringVar(&o.backend, "backend", emulated, "emulated|kernel")
	fs.StringVar(&o.via, "link", "auto", "kernel backend: auto|tun|netem")
	fs.StringVar(&o.pcap, "pcap", "", "write every packet crossing the link to this pcap file")
	fs.StringVar(&o.timeline, "timeline", "", "write TCP state and queue occupancy over time to this CSV file")
	fs.StringVar(&o.plot, "plot", "", "draw the run to this .svg or .png file")
	fs.IntVar(&o.resources, "resources", 40, "page: resources")
	fs.StringVar(&o.total, "total", "120KB", "page: total bytes")
	fs.IntVar(&o.conns, "conns", 6, "page: parallel connections")
	fs.StringVar(&o.size, "size", "5MiB", "bulk: bytes")
	fs.IntVar(&o.requests, "requests", 20, "keepalive: requests")
	fs.StringVar(&o.mode, "mode", "both", "keepalive: fresh|reuse|both")
	fs.IntVar(&o.rounds, "rounds", 50, "nagle: rounds")
	fs.StringVar(&o.nodelay, "nodelay", "both", "nagle: true|false|both")
	fs.StringVar(&o.write, "write", workloads.Split, "nagle: split|coalesced|both")
	return fs
}

// parseArgs parses "<workload> [flags]" (flags may also come first).
func parseArgs(cmd string, args []string) (*options, error) {
	o := &options{}
	fs := newFlagSet(cmd, o)
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return nil, usagef("%s: which workload? want page, bulk, keepalive or nagle", cmd)
	}
	o.workload = rest[0]
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
func parseCases(cmd string, args []string, sweep bool) (*options, []workloads.Case, error) {
	o, err := parseArgs(cmd, args)
	if err != nil {
		return nil, nil, err
	}
	cases, err := o.cases(sweep)
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
	} else if o.backend == kernelBE {
		errs = append(errs,
			reject("clock", "kernel TCP runs in real time"),
			reject("seed", "kernel TCP takes no seed"))
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

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		// flag's messages name the flag: "invalid value "x" for flag -rate: ...".
		msg := strings.Replace(err.Error(), " for flag -", " for --", 1)
		msg = strings.Replace(msg, "flag provided but not defined: -", "unknown flag --", 1)
		return usagef("%s: %s (see netemu help)", fs.Name(), msg)
	}
	return nil
}

func oneOf(flagName, v string, allowed ...string) ([]string, error) {
	if v == "both" && len(allowed) == 2 {
		return allowed, nil
	}
	for _, a := range allowed {
		if v == a {
			return []string{v}, nil
		}
	}
	return nil, usagef("--%s %q: want %s or both", flagName, v, strings.Join(allowed, ", "))
}

// workloadsOf expands the workload flags into workloads (--mode both is
// two workloads).
func (o *options) workloads() ([]workloads.Workload, error) {
	positive := func(name string, v int) error {
		if v <= 0 {
			return usagef("--%s %d: want 1 or more", name, v)
		}
		return nil
	}
	switch o.workload {
	case "page":
		total, err := link.ParseSize(o.total)
		if err != nil {
			return nil, usagef("--total: %v", err)
		}
		for name, v := range map[string]int{"resources": o.resources, "conns": o.conns} {
			if err := positive(name, v); err != nil {
				return nil, err
			}
		}
		if total < int64(o.resources) {
			return nil, usagef("--total %s: want at least one byte per resource (%d)", o.total, o.resources)
		}
		return []workloads.Workload{workloads.Page{Resources: o.resources, Total: int(total), Conns: o.conns}}, nil
	case "bulk":
		size, err := link.ParseSize(o.size)
		if err != nil {
			return nil, usagef("--size: %v", err)
		}
		if size <= 0 {
			return nil, usagef("--size %s: want 1 byte or more, like 5MiB", o.size)
		}
		return []workloads.Workload{workloads.Bulk{Size: int(size)}}, nil
	case "keepalive":
		if err := positive("requests", o.requests); err != nil {
			return nil, err
		}
		modes, err := oneOf("mode", o.mode, workloads.Fresh, workloads.Reuse)
		if err != nil {
			return nil, err
		}
		var ws []workloads.Workload
		for _, m := range modes {
			ws = append(ws, workloads.KeepAlive{Requests: o.requests, Mode: m})
		}
		return ws, nil
	case "nagle":
		if err := positive("rounds", o.rounds); err != nil {
			return nil, err
		}
		nds, err := oneOf("nodelay", o.nodelay, "false", "true")
		if err != nil {
			return nil, err
		}
		writes, err := oneOf("write", o.write, workloads.Split, workloads.Coalesced)
		if err != nil {
			return nil, err
		}
		var ws []workloads.Workload
		for _, nd := range nds {
			for _, w := range writes {
				ws = append(ws, workloads.Nagle{Rounds: o.rounds, NoDelay: nd == "true", Write: w})
			}
		}
		return ws, nil
	}
	return nil, usagef("unknown workload %q; want page, bulk, keepalive or nagle", o.workload)
}

// cases expands the options into the cases to run: every combination of
// the list flags (sweep), times the workload variants.
func (o *options) cases(sweep bool) ([]workloads.Case, error) {
	if !sweep {
		for _, f := range []interface {
			count() int
			flagName() string
		}{o.rtt, o.rate, o.queue, o.delack} {
			if f.count() > 1 {
				return nil, usagef("run: --%s has %d values; use netemu sweep for lists", f.flagName(), f.count())
			}
		}
	}
	ws, err := o.workloads()
	if err != nil {
		return nil, err
	}
	tcp := tcpstack.TCPConfig{CongestionControl: o.cc}
	if err := tcp.Validate(); err != nil {
		return nil, usagef("--cc %q: want cubic or reno", o.cc)
	}
	clk, err := o.clockMode()
	if err != nil {
		return nil, err
	}
	if err := o.checkBackend(); err != nil {
		return nil, err
	}
	if o.plot != "" {
		if ext := strings.ToLower(filepath.Ext(o.plot)); ext != ".svg" && ext != ".png" {
			return nil, usagef("--plot %s: want a file name ending in .svg or .png", o.plot)
		}
	}
	if o.mtu < 576 || o.mtu > 65535 {
		return nil, usagef("--mtu %d: want 576 to 65535 bytes", o.mtu)
	}
	var cases []workloads.Case
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
						cases = append(cases, workloads.Case{Workload: w, Link: lc, TCP: tcp, Clock: clk, Seed: o.seed})
					}
				}
			}
		}
	}
	return cases, nil
}

func (o *options) clockMode() (emu.ClockMode, error) {
	switch o.clock {
	case "virtual":
		return emu.Virtual, nil
	case "real":
		return emu.Real, nil
	}
	return 0, usagef("--clock %q: want virtual or real", o.clock)
}

func (o *options) checkBackend() error {
	if o.backend != emulated && o.backend != kernelBE {
		return usagef("--backend %q: want emulated or kernel", o.backend)
	}
	switch o.via {
	case "auto", "tun", "netem":
	default:
		return usagef("--link %q: want auto, tun or netem", o.via)
	}
	return nil
}
