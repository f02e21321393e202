package main

import (
	"flag"
	"io"
	"slices"
	"strings"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/tcpstack"
)

// The shared flags, by group: each is defined here once, and each
// command takes the groups it declares in commandFlags, less the flags it
// refuses there. A command's flag set holds only the flags it takes, so
// the flag package refuses the others; parseFlags words the refusal with
// the command's reason, and help lists what the command takes.

// A flagGroup is shared flags that go together, listed in help under its
// title, in order.
type flagGroup struct {
	title string
	flags []sharedFlag
	// notHere words the refusal of the group's flags by a command that
	// does not take the group; "" leaves it to the command.
	notHere string
}

// A sharedFlag registers one flag on fs, storing into o.
type sharedFlag struct {
	name string
	add  func(fs *flag.FlagSet, name string, o *options)
}

var (
	linkGroup = flagGroup{title: "Link and stack flags", flags: []sharedFlag{
		{"rtt", func(fs *flag.FlagSet, n string, o *options) {
			o.rtt = newList(fs, n, "50ms", "round-trip time (each direction gets half)", parseDuration("RTT"))
		}},
		{"rate", func(fs *flag.FlagSet, n string, o *options) {
			o.rate = newList(fs, n, "10mbit", "bottleneck rate in tc units: bit kbit mbit gbit (bits/s), bps kbps mbps gbps (bytes/s); 0 or unlimited", tc.ParseRate)
		}},
		{"queue", func(fs *flag.FlagSet, n string, o *options) {
			o.queue = newList(fs, n, "1000", "drop-tail queue per direction: packets (1000) or bytes (150KB)", tc.ParseQueue)
		}},
		{"qdisc", func(fs *flag.FlagSet, n string, o *options) {
			o.qdisc = newList(fs, n, "fifo", "queue discipline per direction, as tc writes it: fifo (drop-tail, see --queue), codel [target 5ms] [interval 100ms] [limit N] [ecn], or fq_codel with also [flows N] [quantum BYTES] [memory_limit 32Mb] [noecn]; a list (fifo,fq_codel) makes a case of each, in run and compare too", parseQdisc)
		}},
		{"qdisc-down", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.qdiscDown, n, "", "queue discipline of the server→client direction only, as --qdisc")
		}},
		{"delack", func(fs *flag.FlagSet, n string, o *options) {
			o.delack = newList(fs, n, "40ms", "Linux-style delayed ACK at the link, for --tcp gvisor (netemu's TCP delays its own); 0 disables", parseDuration("delayed-ACK timer"))
		}},
		{"trace-up", func(fs *flag.FlagSet, n string, o *options) {
			o.traceUp = newList(fs, n, "", "a time-varying rate for the client→server direction in --rate's place: a trace FILE in mahimahi's format, one line per delivery opportunity of 1500 bytes (netemu trace writes some); a list sweeps", o.parseTrace)
		}},
		{"trace-down", func(fs *flag.FlagSet, n string, o *options) {
			o.traceDown = newList(fs, n, "", "the same for the server→client direction", o.parseTrace)
		}},
		{"trace-once", func(fs *flag.FlagSet, n string, o *options) {
			fs.BoolVar(&o.traceOnce, n, false, "play the traces once, as mm-link --once: nothing is delivered after their end")
		}},
		{"cc", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.cc, n, string(tcpstack.Cubic), "congestion control of both hosts: cubic or reno")
		}},
		{"tcp", func(fs *flag.FlagSet, n string, o *options) {
			o.tcp = newList(fs, n, string(tcpstack.DefaultImpl), "TCP of the emulated hosts: netemu (netemu's own, Linux's algorithms) or gvisor (gVisor's netstack); a list runs each (sweep, compare)", parseImpl)
		}},
		{"mtu", func(fs *flag.FlagSet, n string, o *options) {
			fs.IntVar(&o.mtu, n, link.DefaultMTU, "link and NIC MTU in bytes")
		}},
		{"clock", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.clock, n, emu.Virtual.String(), "virtual: deterministic and fast; real: wall clock")
		}},
		{"seed", func(fs *flag.FlagSet, n string, o *options) {
			fs.Uint64Var(&o.seed, n, 1, "seed of all randomness")
		}},
	}}

	impairGroup = flagGroup{title: "Impairments, as netem applies them (list flags sweep: --loss 0,1%,3%)", flags: []sharedFlag{
		{"loss", func(fs *flag.FlagSet, n string, o *options) {
			o.loss = newList(fs, n, "0", "random loss, as netem's loss random: 1%", parsePercent("loss"))
		}},
		{"jitter", func(fs *flag.FlagSet, n string, o *options) {
			o.jitter = newList(fs, n, "0", "delay jitter, uniform ± this, as netem's delay DELAY JITTER", parseDuration("jitter"))
		}},
		{"reorder", func(fs *flag.FlagSet, n string, o *options) {
			o.reorder = newList(fs, n, "0", "packets sent at once, ahead of the delay, as netem's reorder: 10%", parsePercent("reorder"))
		}},
		{"duplicate", func(fs *flag.FlagSet, n string, o *options) {
			o.duplicate = newList(fs, n, "0", "packets sent twice: 1%", parsePercent("duplicate"))
		}},
		{"corrupt", func(fs *flag.FlagSet, n string, o *options) {
			o.corrupt = newList(fs, n, "0", "packets with one bit flipped (the receiver's checksum drops them): 1%", parsePercent("corrupt"))
		}},
		{"netem", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.netem[0], n, "", "tc's netem options for both directions: \"delay 25ms 5ms distribution normal loss 1% 25%\"; what they leave out keeps netemu's flags and defaults (--rtt 50ms, --rate 10mbit), not tc's (no delay, no rate limit)")
		}},
		{"netem-up", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.netem[1], n, "", "tc's netem options for the client→server direction only")
		}},
		{"netem-down", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.netem[2], n, "", "tc's netem options for the server→client direction only")
		}},
	}}

	outputGroup = flagGroup{title: "Output flags", flags: []sharedFlag{
		{"json", func(fs *flag.FlagSet, n string, o *options) {
			fs.BoolVar(&o.json, n, false, "one JSON object per case (JSON lines) instead of a table")
		}},
		{"pcap", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.pcap, n, "", "write every packet crossing the link to this pcap file")
		}},
		{"timeline", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.timeline, n, "", "write TCP state and queue occupancy over time to this CSV file")
		}},
		{"mm-log-up", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.mmLogUp, n, "", "write the client→server direction as mahimahi's mm-link logs it (--uplink-log), for mm-throughput-graph and mm-delay-graph")
		}},
		{"mm-log-down", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.mmLogDown, n, "", "write the server→client direction as mm-link's --downlink-log")
		}},
		{"plot", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.plot, n, "", "draw the run to this .svg or .png file")
		}},
		{"waterfall", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.waterfall, n, "", "draw each request's phases (page, keepalive) to this .svg or .png file, as a browser's network panel does")
		}},
	}}

	sweepGroup = flagGroup{title: "Sweep flags (netemu sweep)", notHere: "it is a flag of netemu sweep", flags: []sharedFlag{
		{"spec", func(fs *flag.FlagSet, n string, o *options) {
			fs.String(n, "", "sweep: the study file (YAML): the workload and the flags that shape its runs (link, impairments, TCP, kernel, seeds, the workload's) by name, lists for axes; output files come from the command line only; see the README")
		}},
		{"seeds", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.seedsFlag, n, "", "sweep: run each cell with every seed of a range, 1-20, or a count, 20 (seeds 1 to 20); the table shows medians and 10th–90th percentiles")
		}},
		{"jobs", func(fs *flag.FlagSet, n string, o *options) {
			fs.IntVar(&o.jobs, n, 0, "sweep: worker processes running cells side by side (default: one per CPU); the output is the same whatever the number")
		}},
		{"out", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.out, n, "", "sweep: write each run's results to this file as it ends (JSON lines; netemu merge makes the output from shards' files)")
		}},
		{"continue", func(fs *flag.FlagSet, n string, o *options) {
			fs.BoolVar(&o.resume, n, false, "sweep: go on from the runs the --out file holds, after an interruption")
		}},
		{"shard", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.shardFlag, n, "", "sweep: run shard i of n (i from 0), every n-th cell; in a Kubernetes Indexed Job, JOB_COMPLETION_INDEX and JOB_COMPLETIONS")
		}},
	}}

	kernelGroup = flagGroup{title: "Kernel mode (root: network namespaces and TUN devices)", flags: []sharedFlag{
		{"backend", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.backend, n, experiment.Emulated{}.Name(), "where TCP runs: "+experiment.BackendNames())
		}},
		{"link", func(fs *flag.FlagSet, n string, o *options) {
			fs.StringVar(&o.via, n, string(kernel.Auto), "kernel backend's link: auto, tun or netem")
		}},
	}}

	// flagGroups are every group, in help's order.
	flagGroups = []*flagGroup{&linkGroup, &impairGroup, &outputGroup, &sweepGroup, &kernelGroup}
)

// flagRules are the shared flags a command takes: its groups' and its
// own list's, less those it refuses, each refusal with its reason.
type flagRules struct {
	groups []*flagGroup
	names  []string          // single flags of groups it does not take
	refuse map[string]string // flags of its groups it does not take, and why
	// other words the refusal of the flags of the other groups; ""
	// uses their group's notHere.
	other string
	// hidden are flags it takes that help leaves out (proxy and shell
	// take --clock real only).
	hidden []string
	// defaults are the command's own defaults of flags it takes, where
	// they differ from the group's (toxiproxy's base link is ideal).
	defaults map[string]string
}

// commandFlags are each command's flag rules: the one place that says
// which shared flag a command takes.
var commandFlags = map[string]flagRules{
	"run":     {groups: []*flagGroup{&linkGroup, &impairGroup, &outputGroup, &kernelGroup}},
	"explain": {groups: []*flagGroup{&linkGroup, &impairGroup, &outputGroup, &kernelGroup}},
	"sweep": {groups: flagGroups, refuse: map[string]string{
		"waterfall": "sweep draws no waterfall; use netemu run, which draws one per case"}},
	"compare": {groups: []*flagGroup{&linkGroup, &impairGroup, &outputGroup, &kernelGroup}, refuse: map[string]string{
		"backend":   "compare runs both backends",
		"waterfall": "compare draws no waterfall; use netemu run",
		"clock":     "compare runs the emulator on the virtual clock and kernel TCP in real time"}},
	"proxy": {groups: []*flagGroup{&linkGroup, &impairGroup, &outputGroup, &kernelGroup}, hidden: []string{"clock"}, refuse: map[string]string{
		"backend":   "the proxy runs the emulated stacks; for programs' own TCP across the link, see netemu shell",
		"link":      "it picks the kernel backend's link",
		"plot":      "the proxy draws no figure; --timeline writes its data",
		"waterfall": "the proxy draws no waterfall"}},
	"shell": {groups: []*flagGroup{&linkGroup, &impairGroup, &outputGroup, &kernelGroup}, hidden: []string{"clock"}, refuse: map[string]string{
		"backend":   "the command's own kernel TCP crosses the link",
		"delack":    "kernel TCP delays its own ACKs",
		"tcp":       "the command's own kernel TCP crosses the link",
		"json":      "the command's output is its own",
		"plot":      "shell draws no figure; --timeline writes its data",
		"waterfall": "shell draws no waterfall"}},
	"toxiproxy": {groups: []*flagGroup{&linkGroup, &impairGroup}, hidden: []string{"clock"},
		defaults: map[string]string{"rtt": "0", "rate": "0", "delack": "0"},
		other:    "each connection of toxiproxy's proxies has a network of its own, on the emulated stacks: no single link to record, draw or sweep, and no kernel backend"},
	"reproduce": {names: []string{"json", "seed", "clock", "backend", "link"},
		other: "reproduce runs the reference cells as published (" + reproduceTakes + ")"},
}

// takes reports whether the command of r takes --name.
func (r flagRules) takes(name string) bool {
	if _, no := r.refuse[name]; no {
		return false
	}
	if slices.Contains(r.names, name) {
		return true
	}
	for _, g := range r.groups {
		for _, f := range g.flags {
			if f.name == name {
				return true
			}
		}
	}
	return false
}

// refusal is why the command of r does not take --name, a shared flag;
// ok is false when name is no shared flag or the command takes it.
func (r flagRules) refusal(name string) (why string, ok bool) {
	if why, ok := r.refuse[name]; ok {
		return why, true
	}
	if r.takes(name) {
		return "", false
	}
	for _, g := range flagGroups {
		for _, f := range g.flags {
			if f.name != name {
				continue
			}
			if r.other != "" {
				return r.other, true
			}
			return g.notHere, g.notHere != ""
		}
	}
	return "", false
}

// newFlagSet returns the flag set of command cmd: the shared flags it
// takes (commandFlags; every shared flag for a name not there), storing
// into o. The flags it does not take keep their defaults in o.
func newFlagSet(cmd string, o *options) *flag.FlagSet {
	all := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	r, known := commandFlags[cmd]
	for _, g := range flagGroups {
		for _, f := range g.flags {
			f.add(all, f.name, o) // the defaults
			if !known || r.takes(f.name) {
				f.add(fs, f.name, o)
				if def, ok := r.defaults[f.name]; ok {
					fl := fs.Lookup(f.name)
					if err := fl.Value.Set(def); err != nil {
						panic("netemu: bad default for " + cmd + " --" + f.name + ": " + err.Error())
					}
					fl.DefValue = def
				}
			}
		}
	}
	return fs
}

// defaultOf is the default of the shared flag --name, as help shows it.
func defaultOf(name string) string {
	return newFlagSet("defaults", &options{}).Lookup(name).DefValue
}

// notTaken words a shared flag the command refuses, for parseFlags: ""
// when name is not a shared flag the command refuses.
func notTaken(cmd, name string) string {
	name, _, _ = strings.Cut(name, "=")
	r, ok := commandFlags[cmd]
	if !ok {
		return ""
	}
	why, ok := r.refusal(name)
	if !ok {
		return ""
	}
	return cmd + ": --" + name + " does not apply: " + why
}
