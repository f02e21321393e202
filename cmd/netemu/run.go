package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/experiment"
)

var runCmd = command{Command: cli.Command{Name: "run", Rules: cli.Rules{Groups: append([]*cli.Group{&cli.TopologyGroup}, cli.LinkRunGroups...)}},
	synopsis: "<workload> [flags]", about: "run one experiment", example: "netemu run bulk --rtt 100ms --rate 10mbit --loss 1%", run: cmdRun}

// cmdRun measures each case (one, or one per workload variant), then
// writes a table row or a JSON record, and a figure per case.
func cmdRun(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
	o, cases, err := cli.ParseCases(ctx, cmd, args)
	if err != nil {
		return err
	}
	o.PrintNotes(stderr)
	defer o.Announce(stderr)
	b, err := o.NewBackend(o.Backend)
	if err != nil {
		return err
	}
	var tw *tabwriter.Writer
	if !o.JSON {
		for _, n := range o.TableNotes() {
			fmt.Fprintln(w, "note: "+n)
		}
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, experiment.TableHeader)
	}
	enc := json.NewEncoder(w)
	var shapes []shaped
	slow := len(cases) > 1 || o.Clock == "real" || b.Name() != (experiment.Emulated{}).Name()
	bar := cli.NewProgress(stderr, len(cases), slow)
	defer bar.Close()
	for _, c := range cases {
		bar.Start(cli.CaseLabel(c))
		vname := o.Grid().Variant(c)
		r, rec, watch, err := o.Measure(ctx, b, c, vname, false)
		bar.Finish()
		if err != nil {
			return err
		}
		if err := o.DrawFigures(c, r, watch, vname); err != nil {
			return err
		}
		if o.JSON {
			if err := enc.Encode(rec); err != nil {
				return err
			}
			continue
		}
		experiment.WriteRow(tw, experiment.Row{Case: c, CaseName: o.Grid().CaseName(c), Workload: r.Workload, Elapsed: r.Elapsed,
			Model: r.Model.Elapsed, Conns: r.Conns, Drops: rec.Drops, Summary: r.Detail.Summary()})
		if d, ok := r.Detail.(experiment.ShapeDetail); ok {
			shapes = append(shapes, shaped{cli.CaseLabel(c), d})
		}
	}
	if tw == nil {
		return nil
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// A topology's flows and links, under the table.
	for _, s := range shapes {
		if err := cli.WriteShape(w, s.label, s.d); err != nil {
			return err
		}
	}
	return nil
}

// shaped is a case run on a topology, for the tables under run's.
type shaped struct {
	label string
	d     experiment.ShapeDetail
}
