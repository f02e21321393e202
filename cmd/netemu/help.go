package main

import (
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/workloads"
)

// flagGroups orders the shared flags in help.
var flagGroups = []struct {
	title string
	names []string
}{
	{"Link and stack flags", []string{"rtt", "rate", "queue", "delack", "cc", "mtu", "clock", "seed"}},
	{"Impairments, as netem applies them (list flags sweep: --loss 0,1%,3%)", []string{"loss", "jitter", "reorder", "duplicate", "corrupt", "netem", "netem-up", "netem-down"}},
	{"Output flags", []string{"json", "pcap", "timeline", "plot"}},
	{"Kernel mode (root: network namespaces and TUN devices)", []string{"backend", "link"}},
}

// usage is the help text, built from the commands, the workloads' kinds
// and the shared flags, so that it lists what exists.
func usage() string {
	var b strings.Builder
	b.WriteString("netemu: network experiments on an emulated link, deterministic and without root.\n\nCommands:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  netemu %s %s\t%s\n", c.name, c.synopsis, c.about)
	}
	tw.Flush()

	b.WriteString("\nWorkloads (a workload's flags follow its name):\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, k := range workloads.Kinds() {
		fs := flag.NewFlagSet(k.Name, flag.ContinueOnError)
		k.Flags(fs)
		var flags []string
		fs.VisitAll(func(f *flag.Flag) { flags = append(flags, "--"+f.Name+" "+f.DefValue) })
		fmt.Fprintf(tw, "  %s\t%s\n  \t  %s\n", k.Name, k.About, strings.Join(flags, "  "))
	}
	tw.Flush()

	fs := newFlagSet("help", &options{})
	for _, g := range flagGroups {
		fmt.Fprintf(&b, "\n%s:\n", g.title)
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, name := range g.names {
			f := fs.Lookup(name)
			arg := f.DefValue
			switch {
			case strings.HasPrefix(f.Name, "netem"):
				arg = "OPTIONS"
			case arg == "":
				arg = "FILE"
			case arg == "false":
				arg = ""
			}
			fmt.Fprintf(tw, "  --%s %s\t%s\n", f.Name, arg, f.Usage)
		}
		tw.Flush()
	}
	return b.String()
}
