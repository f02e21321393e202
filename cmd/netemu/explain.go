package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/experiment"
)

var explainCmd = command{Command: cli.Command{Name: "explain", Rules: cli.Rules{Groups: cli.LinkRunGroups}},
	synopsis: "<workload> [flags]", about: "where the time went: round trips, serialization, delayed-ACK holds, timeouts", example: "netemu explain nagle --rtt 0 --nodelay false", run: cmdExplain}

// cmdExplain runs each case and says where its time went: the share of
// each category, the counts, and the ACKs, segments and connections
// that explain them.
func cmdExplain(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
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
	enc := json.NewEncoder(w)
	bar := cli.NewProgress(stderr, len(cases), o.Clock == "real" || b.Name() != (experiment.Emulated{}).Name())
	defer bar.Close()
	for i, c := range cases {
		bar.Start(cli.CaseLabel(c))
		vname := o.Grid().Variant(c)
		r, rec, watch, err := o.Measure(ctx, b, c, vname, true)
		bar.Finish()
		if err != nil {
			return err
		}
		if err := o.DrawFigures(c, r, watch, vname); err != nil {
			return err
		}
		from := watch.Analyzer().Since(r.Started)
		bd := watch.Analyzer().Breakdown(from, from+r.Elapsed)
		if o.JSON {
			rec.Explain = experiment.NewExplanation(bd)
			if err := enc.Encode(rec); err != nil {
				return err
			}
			continue
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		cli.WriteExplanation(w, c, r, rec, bd)
	}
	return nil
}
