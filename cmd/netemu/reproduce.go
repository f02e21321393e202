package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/workloads"
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
		return startLossy(o, ctx, *runs, *kernelRuns, w, stderr)
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
	return reproduceTables(o, ctx, b, clk, w, stderr)
}

// startLossy checks the flags of reproduce --lossy, runs seeds 1 to runs
// on the emulator and kernelRuns on kernel TCP, and writes the lossy
// table.
func startLossy(o *cli.Options, ctx context.Context, runs, kernelRuns int, w, stderr io.Writer) error {
	if o.Given("backend") || o.Given("seed") {
		return usagef("reproduce --lossy: --backend and --seed do not apply: it runs seeds 1 to --runs on the emulator and --kernel-runs on kernel TCP")
	}
	if runs < 1 || kernelRuns < 0 {
		return usagef("reproduce --lossy: --runs %d, --kernel-runs %d: want --runs 1 or more and --kernel-runs 0 or more", runs, kernelRuns)
	}
	clk, err := o.ClockMode()
	if err != nil {
		return err
	}
	return reproduceLossy(ctx, o, clk, runs, kernelRuns, w, stderr)
}

// reproduceTables measures every reference cell on b with clock clk and
// writes each table, its times beside the reference's, and the note
// that says what was measured; with --json, a record per cell instead.
// A failed write to w stops it before the next cell.
func reproduceTables(o *cli.Options, ctx context.Context, b experiment.Backend, clk emu.ClockMode, w, stderr io.Writer) error {
	refs := workloads.References()
	enc := json.NewEncoder(w)
	out := cli.NewSections(w)
	var lastKernel *kernel.Facts
	bar := cli.NewProgress(stderr, len(refs), true)
	defer bar.Close()
	for _, ref := range refs {
		if err := writeFailed(w); err != nil {
			return err // a full disk: the cells left would be measured for nothing
		}
		c := experiment.ReferenceCase(ref, o.Seed)
		c.Clock = clk
		bar.Start(ref.Table + " " + ref.Label)
		r, rec, _, err := o.Measure(ctx, b, c, "", false)
		bar.Finish()
		if err != nil {
			return err
		}
		if rec.Kernel != nil {
			lastKernel = rec.Kernel
		}
		got, model := r.Headline()
		if o.JSON {
			if err := enc.Encode(referenceRecord(rec, ref, got)); err != nil {
				return err
			}
			continue
		}
		name := "netemu"
		if b.Name() == (experiment.Kernel{}).Name() {
			name = "kernel"
		}
		tw := out.Table(ref.Table, fmt.Sprintf("\treference\t%s\tmodel\t%s vs reference\t", name, name))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", ref.Label, fmtDur(ref.Time), fmtDur(got), fmtDur(model), experiment.Deviation(experiment.Ms(got), experiment.Ms(ref.Time)))
	}
	if out.Flush() {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(reproduceFooter(lastKernel)))
	}
	return nil
}

// referenceRecord is rec, a reference cell's record whose headline time
// is got, with the cell's table, the reference's time and got's
// difference from it; at RTT 0 the virtual clock counts no time, so no
// difference.
func referenceRecord(rec experiment.Record, ref workloads.Reference, got time.Duration) experiment.Record {
	rec.Table = ref.Table
	rec.ReferenceMs = ptr(experiment.Ms(ref.Time))
	if got > 0 {
		rec.DiffPct = ptr((experiment.Ms(got) - experiment.Ms(ref.Time)) / experiment.Ms(ref.Time) * 100)
	}
	return rec
}

// reproduceFooter is the note under the tables: what reference and
// netemu mean, or, when the cells ran on kernel TCP, the facts of the
// last kernel run f.
func reproduceFooter(f *kernel.Facts) string {
	if f == nil {
		return reproduceNote
	}
	return fmt.Sprintf(kernelNote, f.Kernel, f.HZ, f.Link, f.CongestionControl, f.PingpongThresh, f.SlowStartAfterIdle)
}

func ptr[T any](v T) *T { return &v }

const kernelNote = `
reference: Linux TCP over tc netem, as published. kernel: this machine's kernel TCP in two network namespaces:
kernel %s (HZ %d), link %s, cc %s, tcp_pingpong_thresh %s, tcp_slow_start_after_idle %s. model: round trips × RTT
+ bytes ÷ rate (+ delayed-ACK waits for nagle).`

const reproduceNote = `
reference: Linux TCP over tc netem, as published. netemu: netemu's TCP (Linux's algorithms, cubic, its own delayed
ACKs) on the emulated link, virtual clock, 1000-packet queue. model: round trips × RTT + bytes ÷ rate (+ delayed-ACK
waits for nagle).
At RTT 0 the reference figures are the kernel's processing time; the virtual clock counts no CPU time, so netemu
shows 0 there and no difference is computed.`

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
