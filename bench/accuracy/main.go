// Command accuracy writes netemu's accuracy report in Markdown: for every
// cell of the reference tables (workloads.References), the published
// figure next to netemu on the virtual clock, netemu on the real clock,
// kernel TCP over netemu's link (kernel mode, as root) and the analytical
// model, each with its difference from the reference.
//
//	go run ./bench/accuracy > docs/ACCURACY.md
//	go run ./bench/accuracy -real=false -kernel=false   # virtual clock only, about a second
//	go run ./bench/accuracy -runs 3                     # median of 3 runs on the real clock and the kernel
//	go run ./bench/accuracy -grid 40                    # 40 random links: netemu's TCP, gVisor's and the kernel's
//	go run ./bench/accuracy -grid 40 -grid-seed 579724 -grid-cells 7,19   # two cells of that grid again
//	go run ./bench/accuracy -dumbbells 20               # 20 random dumbbells: each flow, netemu's TCP against the kernel's
//	go run ./bench/accuracy -noise-steepness            # two CUBIC flows' shares against the nodes' time, both backends
//
// Each column is an experiment.Backend on a clock; a backend that cannot
// run here (kernel mode without root) leaves its column not measured, with
// the reason. Adding a column is adding a Column to the list in main.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("accuracy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "seed of all randomness")
	realClk := fs.Bool("real", true, "measure the real-clock column (about 35 s per run)")
	kern := fs.Bool("kernel", true, "measure the kernel column (kernel mode; needs root; about 35 s per run)")
	via := fs.String("via", "auto", "kernel mode's link: auto, tun or netem")
	runs := fs.Int("runs", 1, "runs per cell on the real clock and the kernel; the median is reported")
	lossyRuns := fs.Int("lossy-runs", 10, "lossy cells: seeds per cell on the emulator; 0 leaves the lossy section out")
	lossyKernelRuns := fs.Int("lossy-kernel-runs", 5, "lossy cells: seeds per cell on kernel TCP; 0 skips them")
	grid := fs.Int("grid", 0, "instead of the report, draw this many random cells and measure netemu's TCP, gVisor's and the kernel's on each")
	gridSeed := fs.Uint64("grid-seed", 0, "the grid's seed; 0 draws a new one, which the output names")
	gridRuns := fs.Int("grid-runs", gridDefaultRuns, "grid: seeds per lossy cell on each side")
	gridKernelRuns := fs.Int("grid-kernel-runs", gridDefaultKernelRuns, "grid: runs per lossless cell on each side (the emulator's seeds draw its hosts' noise)")
	gridCells := fs.String("grid-cells", "", "grid: measure only these cells of the drawn grid, by number: 7,12")
	gridCC := fs.String("grid-cc", string(tcpstack.Cubic), "grid: the congestion control of every side ("+tcpstack.Netemu.CongestionControlChoices()+"); an emulated TCP without it is left out")
	dumbbells := fs.Int("dumbbells", 0, "instead of the report, draw this many random dumbbells and measure each flow on netemu's TCP and the kernel's")
	dbSeed := fs.Uint64("dumbbell-seed", 0, "the dumbbells' seed; 0 draws a new one, which the output names")
	dbRuns := fs.Int("dumbbell-runs", dbDefaultRuns, "dumbbells: seeds per dumbbell on the emulator")
	dbKernelRuns := fs.Int("dumbbell-kernel-runs", dbDefaultKernelRuns, "dumbbells: runs per dumbbell on kernel TCP")
	dbNoise := fs.String("dumbbell-noise", dbDefaultNoise, "dumbbells: the emulated nodes' time to take a packet in: measured (each dumbbell's, from the routers of its own kernel runs), default (link.DefaultNoise), none, or BASE,SPREAD such as 25us,30us")
	dbCells := fs.String("dumbbell-cells", "", "dumbbells: measure only these of the drawn dumbbells, by number: 3,13")
	hostNoise := fs.Bool("host-noise", false, "instead of the report, measure how late kernel mode's bridge, routers and hosts move packets against the link's schedule")
	steepness := fs.Bool("noise-steepness", false, "instead of the report, measure how two CUBIC flows' shares move with the nodes' time, kernel TCP's with time added to its own, against the emulator's (about 5 minutes)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *steepness {
		if *hostNoise || fs.NFlag() > 2 || fs.NFlag() == 2 && only(fs, "via") == "" || fs.NArg() > 0 {
			fmt.Fprintf(stderr, "accuracy: -noise-steepness takes only -via\n")
			return 2
		}
		env := Environment{Command: "go run ./bench/accuracy " + strings.Join(args, " "), Date: time.Now().UTC().Format("2006-01-02"), Machine: machine()}
		err := measureSteepness(ctx, stdout, env, kernel.Via(*via), func(what string) { fmt.Fprintf(stderr, "accuracy: noise steepness: %s\n", what) })
		if err != nil {
			fmt.Fprintf(stderr, "accuracy: %v\n", err)
			return 1
		}
		return 0
	}
	if *hostNoise {
		if fs.NFlag() > 2 || fs.NFlag() == 2 && only(fs, "via") == "" || fs.NArg() > 0 {
			fmt.Fprintf(stderr, "accuracy: -host-noise takes only -via\n")
			return 2
		}
		env := Environment{Command: "go run ./bench/accuracy " + strings.Join(args, " ") + " > docs/HOSTNOISE.md", Date: time.Now().UTC().Format("2006-01-02"), Machine: machine()}
		err := measureHostNoise(ctx, stdout, env, kernel.Via(*via), func(what string) { fmt.Fprintf(stderr, "accuracy: host noise: %s\n", what) })
		if err != nil {
			fmt.Fprintf(stderr, "accuracy: %v\n", err)
			return 1
		}
		return 0
	}
	if *dumbbells != 0 || only(fs, "dumbbell-") != "" {
		if *dumbbells < 1 || *dumbbells > 1000 || *dbRuns < 1 || *dbKernelRuns < 1 || *grid != 0 {
			fmt.Fprintf(stderr, "accuracy: -dumbbells %d, -dumbbell-runs %d, -dumbbell-kernel-runs %d: want 1 to 1000 dumbbells, at least one run on each side, and no -grid\n", *dumbbells, *dbRuns, *dbKernelRuns)
			return 2
		}
		seed := *dbSeed
		if seed == 0 {
			seed = uint64(time.Now().UnixNano())%1_000_000 + 1
		}
		ds, err := pickDumbbells(drawDumbbells(*dumbbells, seed), *dbCells)
		if err != nil {
			fmt.Fprintf(stderr, "accuracy: %v\n", err)
			return 2
		}
		var noise link.Noise
		exact, measure := false, false
		why := ""
		switch *dbNoise {
		case "measured":
			switch {
			case *kern:
				measure, why = true, "the time the routers of the dumbbell's own kernel runs took (router traversals, docs/HOSTNOISE.md; a run whose bridge was late only if all were), fitted as link.DefaultNoise was, to their 10th percentile and mean; where kernel TCP was not measured, link.DefaultNoise (the table's last column)"
			case only(fs, "dumbbell-noise") != "":
				fmt.Fprintf(stderr, "accuracy: -dumbbell-noise measured takes the kernel runs' own; with -kernel=false give default, none or BASE,SPREAD\n")
				return 2
			default: // nothing to measure: the default
				why = link.DefaultNoise.String() + " (link.DefaultNoise, docs/HOSTNOISE.md)"
			}
		case "default":
			why = link.DefaultNoise.String() + " (link.DefaultNoise, docs/HOSTNOISE.md)"
		case "none":
			exact, why = true, "no time at all (exact)"
		default:
			noise, err = link.ParseNoise(*dbNoise)
			if err != nil || noise.IsZero() {
				fmt.Fprintf(stderr, "accuracy: -dumbbell-noise %q: want measured, default, none or BASE,SPREAD such as 25us,30us (from 0 to %v each)\n", *dbNoise, link.MaxNoise)
				return 2
			}
			why = noise.String() + " (-dumbbell-noise)"
		}
		fmt.Fprintf(stderr, "accuracy: %d dumbbells, seed %d\n", *dumbbells, seed)
		rows, err := measureDumbbells(ctx, ds, *dbRuns, *dbKernelRuns, noise, exact, measure, kernel.Via(*via), *kern, func(n int, what string) {
			fmt.Fprintf(stderr, "accuracy: dumbbell %d/%d: %s\n", n, *dumbbells, what)
		})
		dumbbellMarkdown(stdout, rows, dbReport{Seed: seed, N: *dumbbells, Runs: *dbRuns, KernelRuns: *dbKernelRuns, Cells: *dbCells, NoiseFlag: *dbNoise, Noise: why})
		if err != nil {
			fmt.Fprintf(stderr, "accuracy: %v\n", err)
			return 1
		}
		return 0
	}
	if *grid < 0 || *grid > 10000 || *gridRuns < 1 || *gridKernelRuns < 1 {
		fmt.Fprintf(stderr, "accuracy: -grid %d, -grid-runs %d, -grid-kernel-runs %d: want a grid of 1 to 10000 cells and at least one run per cell\n", *grid, *gridRuns, *gridKernelRuns)
		return 2
	}
	if given := only(fs, "grid-"); *grid == 0 && given != "" {
		fmt.Fprintf(stderr, "accuracy: %s: only with -grid N (e.g. -grid 40 %s)\n", given, strings.SplitN(given, ", ", 2)[0])
		return 2
	}
	if *grid > 0 {
		seed := *gridSeed
		if seed == 0 {
			seed = uint64(time.Now().UnixNano())%1_000_000 + 1
		}
		cc := tcpstack.CongestionControl(*gridCC)
		if !slices.Contains(tcpstack.Netemu.CongestionControls(), cc) {
			fmt.Fprintf(stderr, "accuracy: -grid-cc %q: want one of netemu's TCP's congestion controls: %s\n", *gridCC, tcpstack.Netemu.CongestionControlChoices())
			return 2
		}
		cells, err := pickCells(drawGrid(*grid, seed), *gridCells)
		if err != nil {
			fmt.Fprintf(stderr, "accuracy: %v\n", err)
			return 2
		}
		fmt.Fprintf(stderr, "accuracy: grid of %d cells, seed %d\n", *grid, seed)
		rows, err := measureGrid(ctx, cells, cc, *gridRuns, *gridKernelRuns, kernel.Via(*via), *kern, func(n int, what string) {
			fmt.Fprintf(stderr, "accuracy: grid cell %d/%d: %s\n", n, *grid, what)
		})
		gridMarkdown(stdout, rows, cc, seed, *grid, *gridRuns, *gridKernelRuns, *gridCells)
		fmt.Fprint(stdout, tcpNotes)
		if err != nil {
			fmt.Fprintf(stderr, "accuracy: %v\n", err)
			return 1
		}
		return 0
	}
	if fs.NArg() > 0 || *runs < 1 || *lossyRuns < 0 || *lossyKernelRuns < 0 {
		fmt.Fprintf(stderr, "accuracy: takes only flags (-seed, -real, -kernel, -via, -runs ≥ 1); see -help\n")
		return 2
	}
	cols := []*Column{
		{Name: "virtual", About: "netemu: gVisor TCP (cubic) on netemu's link, virtual clock, 1000-packet queue, 40 ms delayed ACK; deterministic", Backend: experiment.Emulated{}, Clock: emu.Virtual, Seed: *seed, TCP: tcpstack.GVisor},
		{Name: "netemu TCP", About: "netemu's own TCP (Linux's algorithms, package tcp) on netemu's link, virtual clock, 1000-packet queue; it delays its own ACKs, so the link's delayed-ACK stage is off; deterministic", Backend: experiment.Emulated{}, Clock: emu.Virtual, Seed: *seed, TCP: tcpstack.Netemu},
		{Name: "real", About: "gVisor TCP as in virtual, on the real clock (wall time; the stacks' CPU time counts, timers fire late)", Backend: experiment.Emulated{}, Clock: emu.Real, Seed: *seed, Runs: *runs, TCP: tcpstack.GVisor},
		{Name: "kernel", About: "Linux TCP (cubic) in two network namespaces (kernel mode, package kernel; needs root), joined by netemu's link through TUN devices or by tc netem, real time; the link's delayed-ACK stage is off (Linux delays its own ACKs); through TUN, its RTT 0 figures include the bridge's trip through user space", Backend: experiment.Kernel{Via: kernel.Via(*via)}, Runs: *runs},
	}
	if !*realClk {
		cols[2].Skip = "-real=false"
	}
	if !*kern {
		cols[3].Skip = "-kernel=false"
	}
	env := Environment{
		Command: "go run ./bench/accuracy " + argsString(args),
		Date:    time.Now().UTC().Format("2006-01-02"),
		Machine: machine(),
	}
	progress := func(ref workloads.Reference, col *Column) {
		fmt.Fprintf(stderr, "accuracy: %s / %s: %s\n", ref.Table, ref.Label, col.Name)
	}
	t, err := Measure(ctx, workloads.References(), cols, progress)
	if err != nil {
		fmt.Fprintf(stderr, "accuracy: %v\n", err)
		return 1
	}
	if err := t.Markdown(stdout, env); err != nil {
		fmt.Fprintf(stderr, "accuracy: %v\n", err)
		return 1
	}
	if *lossyRuns > 0 {
		kernelRuns := *lossyKernelRuns
		if !*kern {
			kernelRuns = 0
		}
		var rows []experiment.LossyRow
		l := experiment.Lossy{Runs: *lossyRuns, KernelRuns: kernelRuns, Clock: emu.Virtual,
			TCPs: []tcpstack.Impl{tcpstack.GVisor, tcpstack.Netemu}, Kernel: experiment.Kernel{Via: kernel.Via(*via)},
			Start: func(c workloads.Cell) { fmt.Fprintf(stderr, "accuracy: lossy %s / %s\n", c.Table, c.Label) }}
		why, err := l.Measure(ctx, func(r experiment.LossyRow) error { rows = append(rows, r); return nil })
		if kernelRuns == 0 {
			why = "-lossy-kernel-runs 0"
		}
		if err != nil {
			fmt.Fprintf(stderr, "accuracy: %v\n", err)
			return 1
		}
		lossyMarkdown(stdout, rows, *lossyRuns, kernelRuns, why)
	}
	fmt.Fprint(stdout, gridPointer)
	fmt.Fprint(stdout, tcpNotes)
	return 0
}

// only lists the flags given whose names begin with prefix, as typed:
// "-grid-runs 5, -grid-cc bbr"; "" for none.
func only(fs *flag.FlagSet, prefix string) string {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, prefix) {
			given = append(given, "-"+f.Name+" "+f.Value.String())
		}
	})
	return strings.Join(given, ", ")
}

func argsString(args []string) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += a
	}
	if s == "" {
		return "> docs/ACCURACY.md"
	}
	return s + " > docs/ACCURACY.md"
}
