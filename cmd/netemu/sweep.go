package main

import (
	"context"
	"io"
)

// cmdSweep is run over every combination of the comma-separated values of
// --rtt, --rate, --queue and --delack.
func cmdSweep(ctx context.Context, args []string, w, stderr io.Writer) error {
	return runCases(ctx, "sweep", args, w, stderr)
}
