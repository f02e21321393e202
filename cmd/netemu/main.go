// Command netemu runs network experiments on an emulated link between two
// userspace TCP/IP stacks: deterministic, without root.
//
//	netemu run page|bulk|keepalive|nagle [flags]
//	netemu sweep <workload> --rtt 10ms,100ms --rate 2mbit,10mbit [flags]
//	netemu compare <workload> [flags]
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

	"github.com/netemu/netemu/emu/kernel"
)

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
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = cmdRun(ctx, args[1:], stdout, stderr, false)
	case "sweep":
		err = cmdRun(ctx, args[1:], stdout, stderr, true)
	case "reproduce":
		err = cmdReproduce(ctx, args[1:], stdout, stderr)
	case "compare":
		err = cmdCompare(ctx, args[1:], stdout, stderr)
	case "explain":
		err = cmdExplain(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = usagef("unknown command %q; want run, sweep, compare, explain, reproduce or help", args[0])
	}
	if err == nil {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "netemu: %v\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "netemu: %v\n", err)
	return 1
}

const usage = `netemu: network experiments on an emulated link, deterministic and without root.

Commands:
  netemu run <workload> [flags]     run one experiment
  netemu sweep <workload> [flags]   run every combination of comma-separated --rtt/--rate/--queue/--delack values
  netemu compare <workload> [flags] the same case on the emulator and on kernel TCP, side by side (needs root)
  netemu explain <workload> [flags] where the time went: round trips, serialization, delayed-ACK holds, timeouts
  netemu reproduce [--json]         every reference table of the published experiments: reference | netemu | model

Workloads:
  page        --resources 40 --total 120KB --conns 6     many small HTTP/1.1 resources over keep-alive connections
  bulk        --size 5MiB                                 one download over one connection
  keepalive   --requests 20 --mode fresh|reuse|both       sequential requests, new or reused connections
  nagle       --rounds 50 --nodelay true|false|both --write split|coalesced|both
                                                          write-write-read: the 40 ms Nagle/delayed-ACK stall

Link and stack flags:
  --rtt 50ms           round-trip time (each direction gets half)
  --rate 10mbit        bottleneck rate, tc units: bit kbit mbit gbit (bits/s), bps kbps mbps gbps (bytes/s); 0 or unlimited
  --queue 1000         drop-tail queue per direction: packets (1000) or bytes (150KB)
  --delack 40ms        Linux-style delayed ACK at the link; 0 disables
  --cc cubic|reno      congestion control of both hosts
  --mtu 1500           link and NIC MTU in bytes
  --clock virtual|real virtual: deterministic and fast (default); real: wall clock
  --seed 1             seed of all randomness
  --json               one JSON object per case (JSON lines) instead of a table
  --pcap FILE          every packet crossing the link, with the run's timestamps (run, sweep, compare, explain)
  --timeline FILE.csv  TCP state (cwnd, ssthresh, in flight, srtt) and queue occupancy over time
  --plot FILE.svg      a picture: run: cwnd, in flight and queue over time; sweep: elapsed against the
                       swept variable with the reference; compare: both backends (.png works too)

Kernel mode (root: network namespaces and TUN devices):
  --backend emulated|kernel   run, sweep, explain and reproduce on the emulator (default) or on kernel TCP
  --link auto|tun|netem       kernel link: tc netem on a veth pair where the kernel has sch_netem,
                              else netemu's link bridged through two TUN devices (auto picks)
`
