package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/netemu/netemu/experiment"
)

// cmdMerge writes the output of a sweep run in shards, from the results
// files (--out) of its shards: the table, the JSON records and the
// figure, the same bytes as the sweep run whole with the same --json and
// --plot. Parts of different studies, a part missing, given twice or
// unfinished are refused.
func cmdMerge(ctx context.Context, args []string, w, stderr io.Writer) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	json := fs.Bool("json", false, "one JSON object per run and a summary per cell, as sweep --json")
	plot := fs.String("plot", "", "draw the sweep to this .svg or .png file, as sweep --plot")
	var files []string
	for rest := args; len(rest) > 0; {
		if err := parseFlags(fs, rest, ""); err != nil {
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
		return usagef("merge: %v, %s", err, mismatch.Got.Difference(mismatch.Want, isSwitch))
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
	s, err := planSweep(ctx, margs)
	if err != nil {
		return usagef("merge: the parts' sweep %q: %v", strings.Join(h.Args, " "), err)
	}
	s.Study.Study, s.Study.StudySHA256 = h.Study, h.StudySHA256
	if err := s.CheckMerged(ocs); err != nil {
		return usagef("merge: %v", err)
	}
	defer s.o.announce(stderr)
	out := s.newOutput(w, stderr)
	for _, oc := range ocs {
		if err := out.Add(oc); err != nil {
			return err
		}
	}
	return s.finish(out)
}
