package cli

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
)

// FlagHelp lists the shared flags command c takes by group, with their
// defaults, as help shows them.
func FlagHelp(c *Command) string {
	var b strings.Builder
	fs := NewFlagSet(c, &Options{})
	for _, g := range Groups {
		var names []string
		for _, f := range g.flags {
			if fs.Lookup(f.name) != nil && !slices.Contains(c.Hidden, f.name) {
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
			case f.Name == "topology":
				arg = "SHAPE|FILE"
			case f.Name == "access-rtt":
				arg = "RTTS"
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

// OwnFlagsTable writes the flags add registers on a flag set of their
// own, a line each, aligned: "--name", what arg gives (nil: the default
// after a space), and the usage. Commands list their own flags with it.
func OwnFlagsTable(b *strings.Builder, add func(*flag.FlagSet), arg func(*flag.Flag) string) {
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
