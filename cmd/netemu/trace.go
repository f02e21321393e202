package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
)

// traceKinds are netemu trace's generators, and show.
var traceKinds = []struct{ name, args, about string }{
	{"constant", "--rate 12mbit", "a fixed rate"},
	{"onoff", "--rate 24mbit --on 1s --off 500ms", "nothing for --off, then --rate for --on, repeating"},
	{"steps", "--rates 12mbit,24mbit,6mbit --step 2s", "each rate for --step, in turn"},
	{"walk", "--rate 10mbit --spread 20% --step 100ms --length 60s --seed 1", "a random walk: each --step the rate moves by a factor up to 1+spread (kept within 4× of where it starts), the whole scaled to a mean of --rate"},
	{"show", "FILE", "what a trace file offers: its period, opportunities, mean rate and the range of its rate over 100 ms windows"},
}

var traceCmd = command{Command: cli.Command{Name: "trace"}, synopsis: "constant|onoff|steps|walk [flags] | show FILE",
	about: "write a time-varying link rate in mahimahi's trace format (mm-link), or describe one", example: "netemu trace onoff --rate 24mbit --on 1s --off 500ms --out onoff.trace", run: cmdTrace, help: traceHelp}

// cmdTrace writes a trace in mahimahi's format (one millisecond per
// delivery opportunity of a 1500-byte packet), or describes one.
func cmdTrace(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("trace: which kind? want %s", traceKindNames())
	}
	kind := args[0]
	fs := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	tf := traceFlags(fs)
	if err := cli.ParseFlags(fs, args[1:], "", cmd); err != nil {
		return err
	}
	if kind == "show" {
		if fs.NArg() != 1 {
			return usagef("trace show: which file? netemu trace show FILE")
		}
		t, err := cli.ReadTrace(ctx, fs.Arg(0))
		if err != nil {
			return usagef("trace show: %v", err)
		}
		return showTrace(w, t, tf.json)
	}
	if fs.NArg() > 0 {
		return usagef("trace %s: unexpected argument %q; flags look like --rate 12mbit", kind, fs.Arg(0))
	}
	t, err := tf.makeTrace(kind)
	if err != nil {
		return err
	}
	if tf.out == "" {
		_, err := t.WriteTo(w)
		return err
	}
	if err := cli.CheckDir("out", tf.out); err != nil {
		return err
	}
	return writeFileAtomic(tf.out, func(f io.Writer) error {
		_, err := t.WriteTo(f)
		return err
	}, stderr)
}

// makeTrace makes the trace of kind the flags describe; a kind not
// known, or a flag's value out of range, is a usage error.
func (tf *traceOptions) makeTrace(kind string) (*link.Trace, error) {
	var t *link.Trace
	var err error
	switch kind {
	case "constant":
		var r float64
		if r, err = tf.traceRate(kind); err != nil {
			return nil, err
		}
		t, err = link.ConstantTrace(r)
	case "onoff":
		var r float64
		if r, err = tf.traceRate(kind); err != nil {
			return nil, err
		}
		t, err = link.OnOffTrace(r, tf.on, tf.off)
	case "steps":
		var rs []float64
		if rs, err = tf.stepRates(); err != nil {
			return nil, err
		}
		t, err = link.StepsTrace(rs, tf.step)
	case "walk":
		var r float64
		if r, err = tf.traceRate(kind); err != nil {
			return nil, err
		}
		sp, perr := cli.ParsePercent("--spread")(tf.spread)
		if perr != nil {
			return nil, usagef("trace walk: %v", perr)
		}
		t, err = link.RandomWalkTrace(r, sp, tf.step, tf.length, tf.seed)
	default:
		return nil, usagef("trace: unknown kind %q; want %s", kind, traceKindNames())
	}
	if err != nil {
		return nil, usagef("%v", err)
	}
	return t, nil
}

// traceRate is --rate in bits per second, above 0, for a trace of kind.
func (tf *traceOptions) traceRate(kind string) (float64, error) {
	r, err := tc.ParseRate(tf.rate)
	if err != nil || r <= 0 {
		return 0, usagef("trace %s: --rate %q: want a rate above 0 in tc units, like 12mbit", kind, tf.rate)
	}
	return r, nil
}

// stepRates are --rates in bits per second, each 0 or more, for a steps
// trace.
func (tf *traceOptions) stepRates() ([]float64, error) {
	if tf.rates == "" {
		return nil, usagef("trace steps: which rates? give --rates, like --rates 12mbit,24mbit,6mbit")
	}
	var rs []float64
	for _, s := range strings.Split(tf.rates, ",") {
		r, err := tc.ParseRate(strings.TrimSpace(s))
		if err != nil || r < 0 {
			return nil, usagef("trace steps: --rates: %q is not a rate; want tc units, like 12mbit (0 for none)", s)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// traceOptions are netemu trace's flags.
type traceOptions struct {
	rate, rates, spread, out string
	on, off, step, length    time.Duration
	seed                     uint64
	json                     bool
}

// traceFlags adds netemu trace's flags to fs.
func traceFlags(fs *flag.FlagSet) *traceOptions {
	var o traceOptions
	fs.StringVar(&o.rate, "rate", "12mbit", "the rate (constant, onoff) or the mean (walk), in tc units")
	fs.StringVar(&o.rates, "rates", "", "steps: the rates, comma-separated, in tc units")
	fs.DurationVar(&o.on, "on", time.Second, "onoff: how long the link is on")
	fs.DurationVar(&o.off, "off", 500*time.Millisecond, "onoff: how long the link is off")
	fs.DurationVar(&o.step, "step", time.Second, "steps, walk: how long each rate lasts")
	fs.DurationVar(&o.length, "length", time.Minute, "walk: the trace's length")
	fs.StringVar(&o.spread, "spread", "20%", "walk: how far the rate may move each step")
	fs.Uint64Var(&o.seed, "seed", 1, "walk: the seed of the walk")
	fs.StringVar(&o.out, "out", "", "write the trace to this file instead of stdout")
	fs.BoolVar(&o.json, "json", false, "show: one JSON object")
	return &o
}

// traceKindNames lists netemu trace's kinds, for messages.
func traceKindNames() string {
	var names []string
	for _, k := range traceKinds {
		names = append(names, k.name)
	}
	return strings.Join(names, ", ")
}

// traceHelp is netemu trace's help.
func traceHelp(*cli.Command) string {
	var b strings.Builder
	b.WriteString("\nKinds:\n")
	for _, k := range traceKinds {
		fmt.Fprintf(&b, "  netemu trace %s %s\n      %s\n", k.name, k.args, k.about)
	}
	b.WriteString("\nFlags:\n")
	cli.OwnFlagsTable(&b, func(fs *flag.FlagSet) { traceFlags(fs) }, nil)
	b.WriteString("\nA trace is mahimahi's format, as mm-link(1) reads it: one line per delivery\n" +
		"opportunity for a 1500-byte packet, the millisecond it comes at; it repeats\n" +
		"when it ends. It goes to stdout, or to the file of --out; the same flags give\n" +
		"the same trace.\n")
	return b.String()
}

// showTrace describes t: its period, opportunities, mean rate and the
// range of its rate over 100 ms windows.
func showTrace(w io.Writer, t *link.Trace, asJSON bool) error {
	const window = 100 * time.Millisecond
	lo, hi := math.Inf(1), 0.0
	for end := window; end <= max(t.Period(), window); end += window {
		r := t.RateAt(end, window)
		lo, hi = min(lo, r), max(hi, r)
	}
	if asJSON {
		return json.NewEncoder(w).Encode(struct {
			Name          string  `json:"name"`
			PeriodMs      float64 `json:"period_ms"`
			Opportunities int     `json:"opportunities"`
			MeanBps       float64 `json:"mean_bps"`
			Min100msBps   float64 `json:"min_100ms_bps"`
			Max100msBps   float64 `json:"max_100ms_bps"`
		}{t.Name, float64(t.Period()) / 1e6, t.Opportunities(), t.MeanRate(), lo, hi})
	}
	opps := "opportunities"
	if t.Opportunities() == 1 {
		opps = "opportunity"
	}
	_, err := fmt.Fprintf(w, "%s: %d %s over %v, repeating: mean %s; over 100 ms windows %s to %s\n",
		t.Name, t.Opportunities(), opps, t.Period(), showRate(t.MeanRate()), showRate(lo), showRate(hi))
	return err
}

// showRate writes a trace's rate as tc does, to three significant
// digits; 0 is none (tc's 0 would read as unlimited).
func showRate(bps float64) string {
	if bps <= 0 {
		return "0bit"
	}
	unit := math.Pow(10, math.Floor(math.Log10(bps))-2)
	return tc.FormatRate(math.Round(bps/unit) * unit)
}

// writeFileAtomic writes path through a temporary file beside it, renamed
// into place once complete: an error or an interruption leaves no
// half-written file.
func writeFileAtomic(path string, write func(io.Writer) error, stderr io.Writer) error {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		// Renaming over a device or a directory would replace it.
		return usagef("--out %s: not a regular file; give a file's name (without --out the trace goes to stdout)", path)
	}
	f, err := os.CreateTemp(dirOf(path), ".netemu-*")
	if err != nil {
		return usagef("--out %s: %v", path, err)
	}
	tmp := f.Name()
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--out %s: %w", path, err)
	}
	fmt.Fprintf(stderr, "netemu: wrote %s (--out)\n", path)
	return nil
}

// dirOf is the directory of path, "." for a bare name.
func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i+1]
	}
	return "."
}
