package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/cli"
)

var reproduceCmd = command{Command: cli.Command{Name: "reproduce", Rules: cli.Rules{Names: []string{"json", "seed", "clock", "backend", "link"},
	Other: "reproduce runs the reference cells as published (" + reproduceTakes + ")"}},
	synopsis: "[--json] [--lossy]", about: "every reference table of the published experiments: reference | netemu | model", example: "netemu reproduce --lossy --runs 10", run: cmdReproduce, help: reproduceHelp,
	kernel: func(args []string) bool { return slices.Contains(args, "--lossy") }}

// reproduceTakes names the flags reproduce takes; the cells themselves are
// as published.
const reproduceTakes = "it takes --json, --seed, --clock, --backend, --link, --lossy, --runs, --kernel-runs"

// cmdReproduce measures each published reference cell and sets netemu's
// time beside the reference's, or, with --lossy, runs the lossy table.
func cmdReproduce(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
	o := cli.NewOptions(ctx)
	fs := cli.NewFlagSet(cmd, o)
	lossy := fs.Bool("lossy", false, "the lossy table: small queues and random loss, medians over seeds and kernel runs")
	runs := fs.Int("runs", 10, "--lossy: seeds per cell on the emulator (1 to N)")
	kernelRuns := fs.Int("kernel-runs", 5, "--lossy: kernel runs per cell where kernel mode is available; 0 skips them")
	if err := o.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("reproduce: unexpected argument %q; %s", fs.Arg(0), reproduceTakes)
	}
	if err := o.NotApplicable(); err != nil {
		return err
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
	return b.String()
}
