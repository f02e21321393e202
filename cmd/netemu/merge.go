package main

import (
	"context"
	"flag"
	"io"

	"github.com/netemu/netemu/cli"
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
	fs := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
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
	return cli.Merge(ctx, &sweepCmd.Command, files, *json, *plot, w, stderr)
}
