// Command netemu runs network experiments on an emulated link between two
// userspace TCP/IP stacks: deterministic, without root.
//
//	netemu run page|bulk|keepalive|nagle|rpc [flags]
//	netemu sweep <workload> --rtt 10ms,100ms --rate 2mbit,10mbit [flags]
//	netemu compare <workload> [flags]
//	netemu explain <workload> [flags]
//	netemu reproduce [--json] [--backend kernel]
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
	"slices"
	"strings"
	"syscall"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
)

// A command is one subcommand; each lives in the file named after it.
type command struct {
	name     string
	synopsis string // arguments, for help
	about    string
	example  string
	run      func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// help is what the command's help says after its example; nil: the
	// workloads and the shared flags it takes.
	help func() string
}

// commands lists the subcommands in help's order: one line each.
var commands = []command{
	{"run", "<workload> [flags]", "run one experiment", "netemu run bulk --rtt 100ms --rate 10mbit --loss 1%", cmdRun, nil},
	{"sweep", "<workload> [flags]", "run every combination of comma-separated list flags (--rtt, --rate, --queue, --delack, --loss, ...)", "netemu sweep page --rtt 10ms,100ms,200ms --rate 2mbit,10mbit", cmdSweep, nil},
	{"merge", "[--json] [--plot FILE] part-*.jsonl", "the output of a sharded sweep from its shards' --out files, the same bytes as the sweep run whole", "netemu merge part-0.jsonl part-1.jsonl part-2.jsonl", cmdMerge, mergeHelp},
	{"proxy", "--forward LISTEN=UPSTREAM | --socks5 ADDR [flags]", "put unmodified programs behind the link: real sockets in, the emulated link across, real upstreams out (real clock, no root)", "netemu proxy --forward 127.0.0.1:8080=127.0.0.1:3000 --rtt 100ms --rate 5mbit", cmdProxy, proxyHelp},
	{"toxiproxy", "[--listen ADDR] [link flags]", "toxiproxy's HTTP API and clients on the emulated link: each connection of its proxies gets a link of its own, with the proxy's toxics (real clock, no root)", "netemu toxiproxy --listen 127.0.0.1:8474", cmdToxiproxy, toxiproxyHelp},
	{"shell", "[flags] -- COMMAND [ARGS]", "run a command with its own kernel TCP behind the link, in a network namespace; the host's loopback services answer at 198.18.0.2 (needs root)", "netemu shell --rtt 55ms -- curl http://198.18.0.2:8080/", cmdShell, shellHelp},
	{"compare", "<workload> [flags]", "the same case on the emulator and on kernel TCP, side by side (needs root)", "netemu compare keepalive --rtt 55ms --rate 0", cmdCompare, nil},
	{"explain", "<workload> [flags]", "where the time went: round trips, serialization, delayed-ACK holds, timeouts", "netemu explain nagle --rtt 0 --nodelay false", cmdExplain, nil},
	{"reproduce", "[--json] [--lossy]", "every reference table of the published experiments: reference | netemu | model", "netemu reproduce --lossy --runs 10", cmdReproduce, reproduceHelp},
	{"trace", "constant|onoff|steps|walk [flags] | show FILE", "write a time-varying link rate in mahimahi's trace format (mm-link), or describe one", "netemu trace onoff --rate 24mbit --on 1s --off 500ms --out onoff.trace", cmdTrace, traceHelp},
	{"version", "", "the module version, the commit and its date as the build recorded them, and the Go and gVisor versions (also --version, -v)", "netemu version", cmdVersion, func() string { return "" }},
}

// usageError is bad input: reported in one line, exit status 2, as the
// library's experiment.InputError is.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

func main() {
	if kernel.IsShellInit() {
		os.Exit(kernel.ShellInit()) // netemu shell's command, under it (kernel.RunInClient)
	}
	if isWorker() {
		os.Exit(workerMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, nil))
	}
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
	// SIGTERM (timeout, systemd, CI runners) is handled like SIGINT: the
	// run stops, the files written so far are completed, and the exit
	// status is 128 + the signal's number; a command that does not stop
	// is cut short (stop.go).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	code := runStoppable(func(ctx context.Context) int {
		return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}, sigs, os.Stderr, stopLimit)
	signal.Stop(sigs)
	os.Exit(code)
}

// signalError ends a run that a signal interrupted.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return "interrupted by " + e.sig.String() }

// exitStatus is the shell's status for the signal: 128 + its number.
func (e *signalError) exitStatus() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// wantsKernel reports whether the command line runs kernel mode.
func wantsKernel(args []string) bool {
	if len(args) > 0 && (args[0] == "compare" || args[0] == "reproduce" && slices.Contains(args, "--lossy")) {
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
		err = cmdVersion(ctx, args[1:], out, stderr)
	default:
		err = usagef("unknown command %q; want %s or help", args[0], commandNames())
		for _, c := range commands {
			if c.name == args[0] {
				err = c.run(ctx, args[1:], out, stderr)
				if errors.Is(err, flag.ErrHelp) {
					err = commandHelp(c, out)
				}
				break
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
	var se *signalError
	if errors.As(context.Cause(ctx), &se) {
		fmt.Fprintf(stderr, "netemu: %v; files written so far are complete\n", se)
		return se.exitStatus()
	}
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "netemu: %v\n", err)
	var ue *usageError
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

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.err = err
	return n, err
}

// writeFailed returns the error of an earlier write to w, when w is the
// command's checked stdout and a write to it failed: a command of many
// runs stops there instead of measuring what it cannot print.
func writeFailed(w io.Writer) error {
	if c, ok := w.(*checkedWriter); ok {
		return c.err
	}
	return nil
}

func commandNames() string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}
