package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/experiment"
)

var mergeCmd = command{Command: cli.Command{Name: "merge"}, synopsis: "[--json] [--plot FILE] part-*.jsonl",
	about: "the output of a sharded sweep from its shards' --out files, the same bytes as the sweep run whole", example: "netemu merge part-0.jsonl part-1.jsonl part-2.jsonl", run: cmdMerge,
	help: func(*cli.Command) string {
		return "\nFlags:\n  --json       one JSON object per run and a summary per cell, as sweep --json\n  --plot FILE  draw the sweep to this .svg or .png file, as sweep --plot\n"
	}}

// cmdMerge writes the output of a sweep run in shards, from the results
// files (--out) of its shards: the table, the JSON records and the
// figure, the same bytes as the sweep run whole with the same --json and
// --plot. Parts of different studies, a part missing, given twice or
// unfinished are refused.
func cmdMerge(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	json := fs.Bool("json", false, "one JSON object per run and a summary per cell, as sweep --json")
	plot := fs.String("plot", "", "draw the sweep to this .svg or .png file, as sweep --plot")
	var files []string
	for rest := args; len(rest) > 0; {
		if err := cli.ParseFlags(fs, rest, "", cmd); err != nil {
			return err
		}
		if rest = fs.Args(); len(rest) > 0 {
			files, rest = append(files, rest[0]), rest[1:]
		}
	}
	if len(files) == 0 {
		return usagef("merge: which files? give the --out files of a sweep's shards: netemu merge part-*.jsonl")
	}
	h, ocs, err := experiment.MergeResults(ctx, files)
	var mismatch *experiment.StudyMismatchError
	var ie *experiment.InputError
	switch {
	case errors.As(err, &mismatch):
		return usagef("merge: %v, %s", err, mismatch.Got.Difference(mismatch.Want, cli.IsSwitch))
	case errors.As(err, &ie):
		return usagef("merge: %v", err)
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil:
		return fmt.Errorf("merge: %w", err)
	}
	margs := append([]string{}, h.Args...)
	if *json {
		margs = append(margs, "--json")
	}
	if *plot != "" {
		margs = append(margs, "--plot", *plot)
	}
	s, err := planSweep(ctx, &sweepCmd.Command, margs)
	if err != nil {
		return usagef("merge: the parts' sweep %q: %v", strings.Join(h.Args, " "), err)
	}
	s.Study.Study, s.Study.StudySHA256 = h.Study, h.StudySHA256
	if err := s.CheckMerged(ocs); err != nil {
		return usagef("merge: %v", err)
	}
	defer s.o.Announce(stderr)
	out := s.newOutput(w, stderr)
	for _, oc := range ocs {
		if err := out.Add(oc); err != nil {
			return err
		}
	}
	return s.finish(out)
}
