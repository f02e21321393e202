package main

import (
	"context"
	"io"

	"github.com/netemu/netemu/cli"
)

var sweepCmd = command{Command: cli.Command{Name: "sweep", Lists: true, Rules: cli.Rules{Groups: cli.Groups, Refuse: map[string]string{
	"waterfall": "sweep draws no waterfall; use netemu run, which draws one per case"}}},
	synopsis: "<workload> [flags]", about: "run every combination of comma-separated list flags (--rtt, --rate, --queue, --delack, --loss, ...)", example: "netemu sweep page --rtt 10ms,100ms,200ms --rate 2mbit,10mbit", run: cmdSweep}

// cmdSweep runs every combination of the comma-separated values of the
// list flags (the cells), each with every seed of --seeds.
func cmdSweep(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
	return cli.RunSweep(ctx, cmd, args, w, stderr)
}
