package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/netemu/netemu/experiment"
)

// cmdRun measures each case (one, or one per workload variant), then
// writes a table row or a JSON record, and a figure per case.
func cmdRun(ctx context.Context, args []string, w, stderr io.Writer) error {
	o, cases, err := parseCases(ctx, "run", args, false)
	if err != nil {
		return err
	}
	o.printNotes(stderr)
	defer o.announce(stderr)
	b, err := o.newBackend(o.backend)
	if err != nil {
		return err
	}
	var tw *tabwriter.Writer
	if !o.json {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, experiment.TableHeader)
	}
	enc := json.NewEncoder(w)
	slow := len(cases) > 1 || o.clock == "real" || b.Name() != (experiment.Emulated{}).Name()
	bar := newProgress(stderr, len(cases), slow)
	defer bar.close()
	for _, c := range cases {
		bar.start(caseLabel(c))
		vname := o.grid.Variant(c)
		r, rec, watch, err := o.measure(ctx, b, c, vname, false)
		bar.finish()
		if err != nil {
			return err
		}
		if err := o.drawFigures(c, r, watch, vname); err != nil {
			return err
		}
		if o.json {
			if err := enc.Encode(rec); err != nil {
				return err
			}
			continue
		}
		experiment.WriteRow(tw, experiment.Row{Case: c, CaseName: o.grid.CaseName(c), Workload: r.Workload, Elapsed: r.Elapsed,
			Model: r.Model.Elapsed, Conns: r.Conns, Drops: rec.Drops, Summary: r.Detail.Summary()})
	}
	if tw != nil {
		return tw.Flush()
	}
	return nil
}
