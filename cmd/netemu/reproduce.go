package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/link"
)

var reproduceCmd = command{Command: cli.Command{Name: "reproduce", Rules: cli.Rules{Names: []string{"json", "seed", "clock", "backend", "link", "plot", "host-noise"},
	Other: "reproduce runs the reference cells as published (" + reproduceTakes + ")"}},
	synopsis: "[QUESTION] [--json] [--lossy]", about: "the published experiments' reference tables, or a question on shared bottlenecks, emulated and kernel side by side", example: "netemu reproduce rtt-fairness --plot rtt.svg", run: cmdReproduce, help: reproduceHelp,
	kernel: func(args []string) bool {
		question := len(args) > 0 && slices.Contains(cli.QuestionNames(), args[0])
		return slices.Contains(args, "--lossy") || question && !noKernelRuns(args)
	}}

// noKernelRuns reports whether args say --kernel-runs 0.
func noKernelRuns(args []string) bool {
	for i, a := range args {
		a = strings.TrimPrefix(a, "-")
		if a == "-kernel-runs=0" || a == "kernel-runs=0" || (a == "-kernel-runs" || a == "kernel-runs") && i+1 < len(args) && args[i+1] == "0" {
			return true
		}
	}
	return false
}

// reproduceTakes names the flags reproduce takes; the cells themselves are
// as published.
const reproduceTakes = "it takes a question's name, --json, --seed, --clock, --backend, --link, --lossy, --runs, --kernel-runs, --plot, --host-noise"

// A question's runs unless --runs and --kernel-runs say otherwise.
const (
	questionRuns       = 5
	questionKernelRuns = 1
)

// cmdReproduce measures each published reference cell and sets netemu's
// time beside the reference's; with --lossy, runs the lossy table; with
// a question's name, runs the question on both backends.
func cmdReproduce(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
	var question string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		question, args = args[0], args[1:]
	}
	o := cli.NewOptions(ctx)
	fs := cli.NewFlagSet(cmd, o)
	lossy := fs.Bool("lossy", false, "the lossy table: small queues and random loss, medians over seeds and kernel runs")
	runs := fs.Int("runs", 10, "--lossy: seeds per cell on the emulator (1 to N)")
	kernelRuns := fs.Int("kernel-runs", 5, "--lossy: kernel runs per cell where kernel mode is available; 0 skips them")
	if err := o.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		name := fs.Arg(0)
		switch {
		case slices.Contains(cli.QuestionNames(), name) && question != "":
			return usagef("reproduce: %s and %s: one question at a time", question, name)
		case slices.Contains(cli.QuestionNames(), name):
			rest := slices.Concat(args[:len(args)-fs.NArg()], fs.Args()[1:])
			return usagef("reproduce: %s after flags; a question's name comes first: netemu reproduce %s", name, strings.Join(append([]string{name}, rest...), " "))
		}
		return usagef("reproduce: unexpected argument %q; %s", name, reproduceTakes)
	}
	if question != "" {
		for _, name := range []string{"lossy", "seed", "clock", "backend", "link"} {
			if o.Given(name) {
				return usagef("reproduce %s: --%s does not apply: a question runs seeds 1 to --runs on the emulator and --kernel-runs on kernel TCP", question, name)
			}
		}
		qo := cli.QuestionOptions{Runs: questionRuns, KernelRuns: questionKernelRuns, JSON: o.JSON, Plot: o.Plot}
		if o.Given("runs") {
			qo.Runs = *runs
		}
		if o.Given("kernel-runs") {
			qo.KernelRuns = *kernelRuns
		}
		if o.Given("host-noise") {
			n, err := link.ParseNoise(o.HostNoise)
			if err != nil || n.IsZero() {
				return usagef("reproduce %s: --host-noise %q: want BASE,SPREAD, a fixed time and an exponential draw's mean, each from 0 to %v, such as 35us,40us", question, o.HostNoise, link.MaxNoise)
			}
			qo.HostNoise = n
		}
		return cli.Reproduce(ctx, question, qo, w, stderr)
	}
	if o.Given("plot") {
		return usagef("reproduce: --plot draws a question's picture; name one: %s", strings.Join(cli.QuestionNames(), ", "))
	}
	if err := o.NotApplicable(); err != nil {
		return err
	}
	if o.Given("host-noise") {
		return usagef("reproduce: --host-noise applies to a question; the reference tables and --lossy run as published")
	}
	if *lossy {
		return cli.ReproduceLossy(ctx, o, *runs, *kernelRuns, w, stderr)
	}
	if o.Given("runs") || o.Given("kernel-runs") {
		return usagef("reproduce: --runs and --kernel-runs apply to --lossy only")
	}
	clk, err := o.ClockMode()
	if err != nil {
		return err
	}
	b, err := o.NewBackend(o.Backend)
	if err != nil {
		return err
	}
	return cli.ReproduceTables(ctx, o, b, clk, w, stderr)
}

// reproduceHelp is netemu reproduce's help.
func reproduceHelp(c *cli.Command) string {
	var b strings.Builder
	fs := cli.NewFlagSet(c, &cli.Options{})
	b.WriteString("\nFlags:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, name := range c.Names {
		f := fs.Lookup(name)
		fmt.Fprintf(tw, "  --%s %s\t%s\n", f.Name, f.DefValue, f.Usage)
	}
	fmt.Fprintf(tw, "  --lossy\tthe lossy table: small queues and random loss, medians over seeds and kernel runs\n")
	fmt.Fprintf(tw, "  --runs 10\t--lossy: seeds per cell on the emulator\n")
	fmt.Fprintf(tw, "  --kernel-runs 5\t--lossy: kernel runs per cell where kernel mode is available; 0 skips them\n")
	tw.Flush()
	fmt.Fprintf(&b, "\nQuestions (netemu reproduce NAME): each cell on the emulator with seeds 1 to --runs (%d unless given)\n"+
		"and on kernel TCP --kernel-runs times (%d unless given; as root, or in a user namespace where the kernel allows it):\n%s",
		questionRuns, questionKernelRuns, cli.QuestionHelp())
	return b.String()
}
