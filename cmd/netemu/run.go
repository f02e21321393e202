package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/workloads"
)

func cmdRun(ctx context.Context, args []string, w, stderr io.Writer) error {
	return runCases(ctx, "run", args, w, stderr)
}

// runCases is run and sweep: each case measured, then a table row or a
// JSON record; sweep draws one figure of all cases, run one per case.
func runCases(ctx context.Context, cmd string, args []string, w, stderr io.Writer) error {
	sweep := cmd == "sweep"
	o, cases, err := parseCases(cmd, args, sweep)
	if err != nil {
		return err
	}
	o.printNotes(stderr)
	b, err := o.newBackend(o.backend)
	if err != nil {
		return err
	}
	var tw *tabwriter.Writer
	if !o.json {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "workload\trtt\trate\tcase\telapsed\tmodel\tvs model\tconns\tdrops\t")
	}
	enc := json.NewEncoder(w)
	slow := len(cases) > 1 || o.clock == "real" || b.Name() != (experiment.Emulated{}).Name()
	bar := newProgress(stderr, len(cases), slow)
	defer bar.close()
	var results []workloads.Result
	for _, c := range cases {
		bar.start(caseLabel(c))
		vname := o.caseVariant(c, len(cases) > 1)
		r, rec, watch, err := o.measure(ctx, b, c, vname, false)
		bar.finish()
		if err != nil {
			return err
		}
		results = append(results, r)
		if err := o.drawWaterfall(c, r, vname); err != nil {
			return err
		}
		if o.plot != "" && !sweep {
			if err := experiment.RunFigure(experiment.Title(c.Workload), r, watch.Timeline()).Save(variantPath(o.plot, vname)); err != nil {
				return err
			}
		}
		if o.json {
			if err := enc.Encode(rec); err != nil {
				return err
			}
			continue
		}
		drops := "—"
		if rec.Drops != nil {
			drops = fmt.Sprint(*rec.Drops)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t  %s\n", r.Workload, fmtDur(c.RTT()), c.RateLabel(),
			o.caseName(c), fmtDur(r.Elapsed), fmtDur(r.Model.Elapsed), pct(experiment.Ms(r.Elapsed), experiment.Ms(r.Model.Elapsed)), r.Conns, drops, r.Detail.Summary())
	}
	if sweep && o.plot != "" {
		if err := experiment.SweepFigure(cases, results).Save(o.plot); err != nil {
			return err
		}
	}
	if tw != nil {
		return tw.Flush()
	}
	return nil
}
