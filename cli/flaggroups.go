package cli

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/tcpstack"
)

// The shared flags, by group: each is defined here once, and each
// command takes the groups its Rules declare, less the flags they
// refuse. A command's flag set holds only the flags it takes, so the
// flag package refuses the others; ParseFlags words the refusal with the
// command's reason, and help lists what the command takes.

// A Group is shared flags that go together, listed in help under its
// title, in order.
type Group struct {
	title string
	flags []sharedFlag
	// notHere words the refusal of the group's flags by a command that
	// does not take the group; "" leaves it to the command.
	notHere string
}

// Flags names the group's flags, in help's order.
func (g *Group) Flags() []string {
	var names []string
	for _, f := range g.flags {
		names = append(names, f.name)
	}
	return names
}

// A sharedFlag registers one flag on fs, storing into o.
type sharedFlag struct {
	name string
	add  func(fs *flag.FlagSet, name string, o *Options)
}

var (
	LinkGroup = Group{title: "Link and stack flags", flags: []sharedFlag{
		{"rtt", func(fs *flag.FlagSet, n string, o *Options) {
			o.rtt = newList(fs, n, "50ms", "round-trip time (each direction gets half)", parseDuration("RTT"))
		}},
		{"rate", func(fs *flag.FlagSet, n string, o *Options) {
			o.rate = newList(fs, n, "10mbit", "bottleneck rate in tc units: bit kbit mbit gbit (bits/s), bps kbps mbps gbps (bytes/s); 0 or unlimited", tc.ParseRate)
		}},
		{"queue", func(fs *flag.FlagSet, n string, o *Options) {
			o.queue = newList(fs, n, "1000", "drop-tail queue per direction: packets (1000), bytes (150KB), or bandwidth-delay products of each cell's RTT and rate (4bdp)", parseQueueSize)
		}},
		{"qdisc", func(fs *flag.FlagSet, n string, o *Options) {
			o.qdisc = newList(fs, n, "fifo", "queue discipline per direction, as tc writes it: fifo (drop-tail, see --queue), codel [target 5ms] [interval 100ms] [limit N] [ecn], or fq_codel with also [flows N] [quantum BYTES] [memory_limit 32Mb] [noecn]; a list (fifo,fq_codel) makes a case of each, in run and compare too", parseQdisc)
		}},
		{"qdisc-down", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.qdiscDown, n, "", "queue discipline of the server→client direction only, as --qdisc")
		}},
		{"delack", func(fs *flag.FlagSet, n string, o *Options) {
			o.delack = newList(fs, n, "40ms", "Linux-style delayed ACK at the link, for --tcp gvisor (netemu's TCP delays its own); 0 disables", parseDuration("delayed-ACK timer"))
		}},
		{"trace-up", func(fs *flag.FlagSet, n string, o *Options) {
			o.traceUp = newList(fs, n, "", "a time-varying rate for the client→server direction in --rate's place: a trace FILE in mahimahi's format, one line per delivery opportunity of 1500 bytes (netemu trace writes some); a list sweeps", o.parseTrace)
		}},
		{"trace-down", func(fs *flag.FlagSet, n string, o *Options) {
			o.traceDown = newList(fs, n, "", "the same for the server→client direction", o.parseTrace)
		}},
		{"trace-once", func(fs *flag.FlagSet, n string, o *Options) {
			fs.BoolVar(&o.traceOnce, n, false, "play the traces once, as mm-link --once: nothing is delivered after their end")
		}},
		{"cc", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.cc, n, string(tcpstack.DefaultCongestionControl), "congestion control of both hosts: "+tcpstack.DefaultImpl.CongestionControlChoices())
		}},
		{"tcp", func(fs *flag.FlagSet, n string, o *Options) {
			o.tcp = newList(fs, n, string(tcpstack.DefaultImpl), "TCP of the emulated hosts: netemu (netemu's own, Linux's algorithms) or gvisor (gVisor's netstack); a list runs each (sweep, compare)", parseImpl)
		}},
		{"mtu", func(fs *flag.FlagSet, n string, o *Options) {
			fs.IntVar(&o.MTU, n, link.DefaultMTU, "link and NIC MTU in bytes")
		}},
		{"clock", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.Clock, n, emu.Virtual.String(), "virtual: deterministic and fast; real: wall clock")
		}},
		{"seed", func(fs *flag.FlagSet, n string, o *Options) {
			fs.Uint64Var(&o.Seed, n, 1, "seed of all randomness")
		}},
		{"exact", func(fs *flag.FlagSet, n string, o *Options) {
			fs.BoolVar(&o.Exact, n, false, "on the virtual clock, hosts and routers act the instant a packet arrives, without the time a real node takes to take it in ("+link.DefaultNoise.String()+" a packet, measured from kernel TCP's: docs/HOSTNOISE.md)")
		}},
		{"host-noise", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.HostNoise, n, fmt.Sprintf("%dus,%dus", link.DefaultNoise.Base/time.Microsecond, link.DefaultNoise.Spread/time.Microsecond),
				"on the virtual clock, each host's and router's time to take a packet in: a fixed time, and an exponential draw of the second's mean (another machine's kernel nodes: docs/HOSTNOISE.md)")
		}},
	}}

	ImpairGroup = Group{title: "Impairments, as netem applies them (list flags sweep: --loss 0,1%,3%)", flags: []sharedFlag{
		{"loss", func(fs *flag.FlagSet, n string, o *Options) {
			o.loss = newList(fs, n, "0", "random loss, as netem's loss random: 1%", ParsePercent("loss"))
		}},
		{"jitter", func(fs *flag.FlagSet, n string, o *Options) {
			o.jitter = newList(fs, n, "0", "delay jitter, uniform ± this, as netem's delay DELAY JITTER", parseDuration("jitter"))
		}},
		{"reorder", func(fs *flag.FlagSet, n string, o *Options) {
			o.reorder = newList(fs, n, "0", "packets sent at once, ahead of the delay, as netem's reorder: 10%", ParsePercent("reorder"))
		}},
		{"duplicate", func(fs *flag.FlagSet, n string, o *Options) {
			o.duplicate = newList(fs, n, "0", "packets sent twice: 1%", ParsePercent("duplicate"))
		}},
		{"corrupt", func(fs *flag.FlagSet, n string, o *Options) {
			o.corrupt = newList(fs, n, "0", "packets with one bit flipped (the receiver's checksum drops them): 1%", ParsePercent("corrupt"))
		}},
		{"netem", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.netem[0], n, "", "tc's netem options for both directions: \"delay 25ms 5ms distribution normal loss 1% 25%\"; what they leave out keeps netemu's flags and defaults (--rtt 50ms, --rate 10mbit), not tc's (no delay, no rate limit)")
		}},
		{"netem-up", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.netem[1], n, "", "tc's netem options for the client→server direction only")
		}},
		{"netem-down", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.netem[2], n, "", "tc's netem options for the server→client direction only")
		}},
	}}

	OutputGroup = Group{title: "Output flags", flags: []sharedFlag{
		{"json", func(fs *flag.FlagSet, n string, o *Options) {
			fs.BoolVar(&o.JSON, n, false, "one JSON object per case (JSON lines) instead of a table")
		}},
		{"pcap", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.pcap, n, "", "write the link's packets to this file: FILE.pcapng holds both ends of the link and its drops, each with its reason; any other name a classic pcap of what arrived")
		}},
		{"timeline", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.timeline, n, "", "write TCP state and queue occupancy over time to this CSV file")
		}},
		{"mm-log-up", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.mmLogUp, n, "", "write the client→server direction as mahimahi's mm-link logs it (--uplink-log), for mm-throughput-graph and mm-delay-graph")
		}},
		{"mm-log-down", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.mmLogDown, n, "", "write the server→client direction as mm-link's --downlink-log")
		}},
		{"plot", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.Plot, n, "", "draw the run to this .svg or .png file")
		}},
		{"waterfall", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.waterfall, n, "", "draw each request's phases (page, keepalive) to this .svg or .png file, as a browser's network panel does")
		}},
	}}

	SweepGroup = Group{title: "Sweep flags (netemu sweep)", notHere: "it is a flag of netemu sweep", flags: []sharedFlag{
		{"spec", func(fs *flag.FlagSet, n string, o *Options) {
			fs.String(n, "", "sweep: the study file (YAML): the workload and the flags that shape its runs (link, impairments, TCP, kernel, seeds, the workload's) by name, lists for axes; output files come from the command line only; see docs/STUDIES.md")
		}},
		{"seeds", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.SeedsFlag, n, "", "sweep: run each cell with every seed of a range, 1-20, or a count, 20 (seeds 1 to 20); the table shows medians and 10th–90th percentiles")
		}},
		{"jobs", func(fs *flag.FlagSet, n string, o *Options) {
			fs.IntVar(&o.Jobs, n, 0, "sweep: worker processes running cells side by side (default: one per CPU); the output is the same whatever the number")
		}},
		{"out", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.Out, n, "", "sweep: write each run's results to this file as it ends (JSON lines; netemu merge makes the output from shards' files)")
		}},
		{"continue", func(fs *flag.FlagSet, n string, o *Options) {
			fs.BoolVar(&o.Resume, n, false, "sweep: go on from the runs the --out file holds, after an interruption")
		}},
		{"shard", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.ShardFlag, n, "", "sweep: run shard i of n (i from 0), every n-th cell; in a Kubernetes Indexed Job, JOB_COMPLETION_INDEX and JOB_COMPLETIONS; in a SLURM job array (--array=0-N), SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT")
		}},
	}}

	KernelGroup = Group{title: "Kernel mode (root: network namespaces and TUN devices)", flags: []sharedFlag{
		{"backend", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.Backend, n, experiment.Emulated{}.Name(), "where TCP runs: "+experiment.BackendNames())
		}},
		{"link", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.Via, n, string(kernel.Auto), "kernel backend's link: auto, tun or netem")
		}},
	}}

	TopologyGroup = Group{title: "Topologies (netemu run, sweep and compare; the link flags shape the bottleneck)", notHere: "topologies run with netemu run, sweep and compare", flags: []sharedFlag{
		{"topology", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.topology, n, "", "run the workload once per flow of a network of more hosts: dumbbell:N (N clients and N servers across one bottleneck), star:N (N hosts through one router to a server), chain:K (K bottlenecks in a row, one flow across all and one per hop), or a topology FILE in YAML (docs/TOPOLOGIES.md)")
		}},
		{"access-rtt", func(fs *flag.FlagSet, n string, o *Options) {
			fs.StringVar(&o.accessRTT, n, "", "dumbbell: each client's round trip to the bottleneck's router, in client order: 4ms,80ms (the rest have none)")
		}},
	}}

	// LinkRunGroups are the groups of a command that runs cases or a
	// link of its own: all but the sweep's and the topologies'.
	LinkRunGroups = []*Group{&LinkGroup, &ImpairGroup, &OutputGroup, &KernelGroup}

	// Groups are every group, in help's order.
	Groups = []*Group{&LinkGroup, &ImpairGroup, &TopologyGroup, &OutputGroup, &SweepGroup, &KernelGroup}
)

// Rules are the shared flags a command takes: its groups' and its own
// list's, less those it refuses, each refusal with its reason.
type Rules struct {
	Groups []*Group
	Names  []string          // single flags of groups it does not take
	Refuse map[string]string // flags of its groups it does not take, and why
	// Other words the refusal of the flags of the other groups; ""
	// uses their group's own words.
	Other string
	// Hidden are flags it takes that help leaves out (proxy and shell
	// take --clock real only).
	Hidden []string
	// Defaults are the command's own defaults of flags it takes, where
	// they differ from the group's (toxiproxy's base link is ideal).
	Defaults map[string]string
}

// AllFlags takes every shared flag: help's list, the flags' defaults.
var AllFlags = Rules{Groups: Groups}

// A Command is what a front end's command declares on its registration:
// its name, for messages, the shared flags it takes, and how it runs its
// cases. No command is known here by its name.
type Command struct {
	Name string
	Rules
	// Lists: a list flag's values make a case each (sweep). Without it
	// a list is refused, but for --qdisc's, which are kinds of queue,
	// as a workload's variants are.
	Lists bool
	// BothBackends: the command runs each case on the emulator, on the
	// virtual clock, with each TCP of --tcp's list, and on kernel TCP
	// (compare); --backend and --clock are its own.
	BothBackends bool
	// Repeatable are the command's own flags that may be given more than
	// once (proxy's --forward); any other flag given twice is refused.
	Repeatable []string
}

// Takes reports whether the command of r takes --name.
func (r Rules) Takes(name string) bool {
	if _, no := r.Refuse[name]; no {
		return false
	}
	if slices.Contains(r.Names, name) {
		return true
	}
	for _, g := range r.Groups {
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
func (r Rules) refusal(name string) (why string, ok bool) {
	if why, ok := r.Refuse[name]; ok {
		return why, true
	}
	if r.Takes(name) {
		return "", false
	}
	for _, g := range Groups {
		for _, f := range g.flags {
			if f.name != name {
				continue
			}
			if r.Other != "" {
				return r.Other, true
			}
			return g.notHere, g.notHere != ""
		}
	}
	return "", false
}

// NewFlagSet returns the flag set of command c: the shared flags it
// takes, storing into o. The flags it does not take keep their defaults
// in o. The command's own flags go on the same set.
func NewFlagSet(c *Command, o *Options) *flag.FlagSet {
	all := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.cmd = c
	for _, g := range Groups {
		for _, f := range g.flags {
			f.add(all, f.name, o) // the defaults
			if c.Takes(f.name) {
				f.add(fs, f.name, o)
				if def, ok := c.Defaults[f.name]; ok {
					fl := fs.Lookup(f.name)
					if err := fl.Value.Set(def); err != nil {
						panic("netemu: bad default for " + c.Name + " --" + f.name + ": " + err.Error())
					}
					fl.DefValue = def
				}
			}
		}
	}
	return fs
}

// allFlags is a command that takes every shared flag.
var allFlags = &Command{Name: "netemu", Rules: AllFlags}

// defaultOf is the default of the shared flag --name, as help shows it.
func defaultOf(name string) string {
	return NewFlagSet(allFlags, &Options{}).Lookup(name).DefValue
}

// notTaken words a shared flag command c refuses, for ParseFlags: ""
// when name is not a shared flag c refuses, or c declares no shared
// flags at all (nil, or no Rules).
func notTaken(c *Command, name string) string {
	name, _, _ = strings.Cut(name, "=")
	if c == nil || c.Groups == nil && c.Names == nil {
		return ""
	}
	why, ok := c.refusal(name)
	if !ok {
		return ""
	}
	return c.Name + ": --" + name + " does not apply: " + why
}
