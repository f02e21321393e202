package main

import (
	"context"
	"io"

	"github.com/netemu/netemu/cli"
)

var compareCmd = command{Command: cli.CompareCommand,
	synopsis: "<workload> [flags]", about: "the same case on the emulator and on kernel TCP, side by side (needs root)", example: "netemu compare keepalive --rtt 55ms --rate 0", run: cmdCompare,
	kernel: func([]string) bool { return true }}

// cmdCompare runs each case on the emulator (virtual clock) and on kernel
// TCP over the same link, side by side.
func cmdCompare(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
	o, cases, err := cli.ParseCases(ctx, cmd, args)
	if err != nil {
		return err
	}
	o.PrintNotes(stderr)
	defer o.Announce(stderr)
	return cli.Compare(ctx, o, cases, w, stderr)
}
