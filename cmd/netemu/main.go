// Command netemu runs network experiments on an emulated link between two
// userspace TCP/IP stacks: deterministic, without root.
//
//	netemu run page|bulk|keepalive|nagle|rpc [flags]
//	netemu sweep <workload> --rtt 10ms,100ms --rate 2mbit,10mbit [flags]
//	netemu compare <workload> [flags]
//	netemu explain <workload> [flags]
//	netemu reproduce [QUESTION] [--json] [--backend kernel]
//	netemu proxy --forward 127.0.0.1:8080=127.0.0.1:80 [link flags]
//	netemu toxiproxy [--listen 127.0.0.1:8474] [link flags]
//	netemu shell [link flags] -- COMMAND [ARGS]
//
// Run "netemu help" for the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
)

// A command is one subcommand; each lives in the file named after it,
// with its registration: what it is, the shared flags it takes and how
// it runs its cases (cli.Command), and what it needs.
type command struct {
	cli.Command
	synopsis string // arguments, for help
	about    string
	example  string
	run      func(ctx context.Context, c *cli.Command, args []string, stdout, stderr io.Writer) error
	// help is what the command's help says after its example; nil: the
	// workloads and the shared flags it takes.
	help func(c *cli.Command) string
	// kernel reports whether the command, with args, runs kernel TCP
	// whatever --backend says (nil: only as --backend says).
	kernel func(args []string) bool
}

// commands lists the subcommands in help's order: one line each.
var commands = []*command{&runCmd, &sweepCmd, &mergeCmd, &proxyCmd, &toxiproxyCmd, &shellCmd, &compareCmd, &explainCmd, &reproduceCmd, &traceCmd, &versionCmd}

// usagef is bad input: one line, exit status 2.
var usagef = cli.Usagef

func main() {
	if kernel.IsShellInit() {
		os.Exit(kernel.ShellInit()) // netemu shell's command, under it (kernel.RunInClient)
	}
	if cli.IsWorker() {
		os.Exit(cli.WorkerMain(&sweepCmd.Command, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, nil))
	}
	// Kernel mode without root: where the machine allows it, run again
	// inside a user namespace of our own, where we are root.
	if wantsKernel(os.Args[1:]) && os.Geteuid() != 0 && kernel.CanReexec() == nil {
		code, err := kernel.Reexec()
		if err != nil {
			fmt.Fprintf(os.Stderr, "netemu: kernel mode: %v\n", err)
			code = 2
		}
		os.Exit(code)
	}
	// SIGTERM (timeout, systemd, CI runners) is handled like SIGINT: the
	// run stops, the files written so far are completed, and the exit
	// status is 128 + the signal's number; a command that does not stop
	// is cut short (stop.go).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	code := cli.RunStoppable(func(ctx context.Context) int {
		return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}, sigs, os.Stderr, cli.StopLimit)
	signal.Stop(sigs)
	os.Exit(code)
}

// wantsKernel reports whether the command line runs kernel mode.
func wantsKernel(args []string) bool {
	if c := lookup(args); c != nil && c.kernel != nil && c.kernel(args[1:]) {
		return true
	}
	for i, a := range args {
		if a == "--backend=kernel" || a == "-backend=kernel" || (a == "--backend" || a == "-backend") && i+1 < len(args) && args[i+1] == "kernel" {
			return true
		}
	}
	return false
}

// run is the whole command, for tests: it returns the exit status. Every
// write to stdout is checked: output that could not be written is an
// error (exit 1), never a silent success.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	out := &checkedWriter{w: stdout}
	var err error
	switch args[0] {
	case "help", "-h", "-help", "--help":
		err = cmdHelp(args[1:], out)
	case "--version", "-version", "-v":
		err = cmdVersion(ctx, &versionCmd.Command, args[1:], out, stderr)
	default:
		err = usagef("unknown command %q; want %s or help", args[0], commandNames())
		if c := lookup(args); c != nil {
			err = c.run(ctx, &c.Command, args[1:], out, stderr)
			if errors.Is(err, flag.ErrHelp) {
				err = commandHelp(c, out)
			}
		}
	}
	if out.err != nil { // whatever the command made of it
		err = fmt.Errorf("writing the output: %w", out.err)
	}
	return exitStatus(ctx, err, stderr)
}

// exitStatus is the exit status of a command that returned err, ctx
// being the run's, after it writes the line that says why on stderr.
func exitStatus(ctx context.Context, err error, stderr io.Writer) int {
	var ee *exitError
	if errors.As(err, &ee) { // the status of the program netemu ran
		if ee.err != nil {
			fmt.Fprintf(stderr, "netemu: %v\n", ee.err)
		}
		return ee.code
	}
	var se *cli.SignalError
	if errors.As(context.Cause(ctx), &se) {
		fmt.Fprintf(stderr, "netemu: %v; files written so far are complete\n", se)
		return se.ExitStatus()
	}
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "netemu: %v\n", err)
	var ue *cli.UsageError
	var ie *experiment.InputError
	if errors.As(err, &ue) || errors.As(err, &ie) {
		return 2
	}
	return 1
}

// checkedWriter keeps the first error of the writes through it, and
// drops the writes after it.
type checkedWriter struct {
	w   io.Writer
	err error
}

// WriteErr is the first error of a write through c, nil if none.
func (c *checkedWriter) WriteErr() error { return c.err }

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.err = err
	return n, err
}

// lookup is the command args name first; nil for none.
func lookup(args []string) *command {
	for _, c := range commands {
		if len(args) > 0 && c.Name == args[0] {
			return c
		}
	}
	return nil
}

func commandNames() string {
	var names []string
	for _, c := range commands {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

var fmtDur = link.FormatDuration
