// Command netemu runs network experiments on an emulated link between two
// userspace TCP/IP stacks: deterministic, without root.
//
//	netemu run page|bulk|keepalive|nagle|rpc [flags]
//	netemu sweep <workload> --rtt 10ms,100ms --rate 2mbit,10mbit [flags]
//	netemu compare <workload> [flags]
//	netemu explain <workload> [flags]
//	netemu reproduce [--json] [--backend kernel]
//
// Run "netemu help" for the flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/netemu/netemu/kernel"
)

// A command is one subcommand; each lives in the file named after it.
type command struct {
	name     string
	synopsis string // arguments, for help
	about    string
	run      func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands in help's order: one line each.
var commands = []command{
	{"run", "<workload> [flags]", "run one experiment", cmdRun},
	{"sweep", "<workload> [flags]", "run every combination of comma-separated --rtt/--rate/--queue/--delack values", cmdSweep},
	{"compare", "<workload> [flags]", "the same case on the emulator and on kernel TCP, side by side (needs root)", cmdCompare},
	{"explain", "<workload> [flags]", "where the time went: round trips, serialization, delayed-ACK holds, timeouts", cmdExplain},
	{"reproduce", "[--json]", "every reference table of the published experiments: reference | netemu | model", cmdReproduce},
}

// usageError is bad input: reported in one line, exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

func main() {
	// Kernel mode without root: where the machine allows it, run again
	// inside a user namespace of our own, where we are root.
	if wantsKernel(os.Args[1:]) && os.Geteuid() != 0 && kernel.CanReexec() == nil {
		code, err := kernel.Reexec()
		if err != nil {
			fmt.Fprintf(os.Stderr, "netemu: --backend kernel: %v\n", err)
			code = 2
		}
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// wantsKernel reports whether the command line runs kernel mode.
func wantsKernel(args []string) bool {
	if len(args) > 0 && args[0] == "compare" {
		return true
	}
	for i, a := range args {
		if a == "--backend=kernel" || a == "-backend=kernel" || (a == "--backend" || a == "-backend") && i+1 < len(args) && args[i+1] == "kernel" {
			return true
		}
	}
	return false
}

// run is the whole command, for tests: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	var err error
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage())
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err = c.run(ctx, args[1:], stdout, stderr)
			break
		}
	}
	if err == nil && !known(args[0]) {
		err = usagef("unknown command %q; want %s or help", args[0], commandNames())
	}
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "netemu: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

func known(name string) bool {
	for _, c := range commands {
		if c.name == name {
			return true
		}
	}
	return false
}

func commandNames() string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}
