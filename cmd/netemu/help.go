package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/workloads"
)

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

	b.WriteString(flagHelp(""))
	b.WriteString("\nnetemu help <command> or <workload> says more.\n")
	return b.String()
}

// flagHelp lists the shared flags command cmd takes by group, with their
// defaults; every shared flag for "".
func flagHelp(cmd string) string {
	var b strings.Builder
	fs := newFlagSet(cmd, &options{})
	r, known := commandFlags[cmd]
	for _, g := range flagGroups {
		var names []string
		for _, f := range g.flags {
			if fs.Lookup(f.name) != nil && !(known && slices.Contains(r.hidden, f.name)) {
				names = append(names, f.name)
			}
		}
		if len(names) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:\n", g.title)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, name := range names {
			f := fs.Lookup(name)
			arg := f.DefValue
			switch {
			case strings.HasPrefix(f.Name, "netem"):
				arg = "OPTIONS"
			case strings.HasPrefix(f.Name, "qdisc"):
				arg = "QDISC"
			case f.Name == "seeds":
				arg = "1-20"
			case f.Name == "jobs":
				arg = "N"
			case f.Name == "shard":
				arg = "i/n"
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

// cmdHelp is "netemu help [command|workload]".
func cmdHelp(args []string, w io.Writer) error {
	if len(args) == 0 {
		_, err := io.WriteString(w, usage())
		return err
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		_, err := io.WriteString(w, "netemu help [command|workload]\n  every command, workload and flag; with a name, that command's or workload's flags, their defaults and an example\n\nExample:\n  netemu help sweep\n")
		return err
	}
	for _, c := range commands {
		if c.name == args[0] {
			return commandHelp(c, w)
		}
	}
	if k, ok := workloads.Lookup(args[0]); ok {
		return workloadHelp(k, w)
	}
	return usagef("help %q: no such command or workload; want one of help, %s, or a workload: %s", args[0], commandNames(), workloads.Names())
}

// commandHelp prints one command's synopsis, an example and its flags
// with their defaults.
func commandHelp(c command, w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "netemu %s %s\n  %s\n\nExample:\n  %s\n", c.name, c.synopsis, c.about, c.example)
	if c.help != nil {
		b.WriteString(c.help())
	} else {
		b.WriteString("\nWorkloads: " + workloads.Names() + " (netemu help <workload> lists a workload's flags)\n")
		b.WriteString(flagHelp(c.name))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// workloadHelp prints a workload's flags with their defaults.
func workloadHelp(k workloads.Kind, w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "workload %s: %s\n\nFlags (after the workload's name):\n", k.Name, k.About)
	ownFlagsTable(&b, func(fs *flag.FlagSet) { k.Flags(fs) }, nil)
	fmt.Fprintf(&b, "\nExample:\n  netemu run %s --rtt 50ms --rate 10mbit\n", k.Name)
	_, err := io.WriteString(w, b.String())
	return err
}

// mergeHelp is netemu merge's help.
func mergeHelp() string {
	return "\nFlags:\n  --json       one JSON object per run and a summary per cell, as sweep --json\n  --plot FILE  draw the sweep to this .svg or .png file, as sweep --plot\n"
}

// reproduceHelp is netemu reproduce's help.
func reproduceHelp() string {
	var b strings.Builder
	fs := newFlagSet("reproduce", &options{})
	b.WriteString("\nFlags:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, name := range commandFlags["reproduce"].names {
		f := fs.Lookup(name)
		fmt.Fprintf(tw, "  --%s %s\t%s\n", f.Name, f.DefValue, f.Usage)
	}
	fmt.Fprintf(tw, "  --lossy\tthe lossy table: small queues and random loss, medians over seeds and kernel runs\n")
	fmt.Fprintf(tw, "  --runs 10\t--lossy: seeds per cell on the emulator\n")
	fmt.Fprintf(tw, "  --kernel-runs 5\t--lossy: kernel runs per cell where kernel mode is available; 0 skips them\n")
	tw.Flush()
	return b.String()
}

// ownFlagsTable writes the flags add registers on a flag set of their
// own, a line each, aligned: "--name", what arg gives (nil: the default
// after a space), and the usage. Commands list their own flags with it.
func ownFlagsTable(b *strings.Builder, add func(*flag.FlagSet), arg func(*flag.Flag) string) {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	add(fs)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		a := " " + f.DefValue
		if arg != nil {
			a = arg(f)
		}
		fmt.Fprintf(tw, "  --%s%s\t%s\n", f.Name, a, f.Usage)
	})
	tw.Flush()
}
