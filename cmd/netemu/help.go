package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/workloads"
)

// usage is the help text, built from the commands, the workloads' kinds
// and the shared flags, so that it lists what exists.
func usage() string {
	var b strings.Builder
	b.WriteString("netemu: network experiments on an emulated link, deterministic and without root.\n\nCommands:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  netemu %s %s\t%s\n", c.Name, c.synopsis, c.about)
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

	b.WriteString(cli.FlagHelp(&cli.Command{Name: "netemu", Rules: cli.AllFlags}))
	b.WriteString("\nnetemu help <command> or <workload> says more.\n")
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
		if c.Name == args[0] {
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
func commandHelp(c *command, w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "netemu %s %s\n  %s\n\nExample:\n  %s\n", c.Name, c.synopsis, c.about, c.example)
	if c.help != nil {
		b.WriteString(c.help(&c.Command))
	} else {
		b.WriteString("\nWorkloads: " + workloads.Names() + " (netemu help <workload> lists a workload's flags)\n")
		b.WriteString(cli.FlagHelp(&c.Command))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// workloadHelp prints a workload's flags with their defaults.
func workloadHelp(k workloads.Kind, w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "workload %s: %s\n\nFlags (after the workload's name):\n", k.Name, k.About)
	cli.OwnFlagsTable(&b, func(fs *flag.FlagSet) { k.Flags(fs) }, nil)
	fmt.Fprintf(&b, "\nExample:\n  netemu run %s --rtt 50ms --rate 10mbit\n", k.Name)
	_, err := io.WriteString(w, b.String())
	return err
}
