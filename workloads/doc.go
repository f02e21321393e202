// Package workloads reproduces network experiments as plain Go network
// code, each returning a typed Result with the analytical model next to
// the measurement:
//
//   - Page: many small HTTP resources over a few keep-alive connections;
//   - Bulk: one large HTTP download;
//   - KeepAlive: sequential requests on fresh or reused connections;
//   - Nagle: write-write-read rounds with and without Nagle's algorithm;
//   - RPC: sequential calls on one raw TCP connection;
//   - Loaded: a probe's round-trip time while bulk flows load the link;
//   - Share: bulk flows sharing the bottleneck, and their fairness.
//
// Each workload runs against an emu.Env, so the same code runs over the
// emulated hosts and over kernel sockets, on the virtual or the real
// clock. Case runs one workload on a new emulated network:
//
//	r, st, err := workloads.Case{
//		Workload: workloads.KeepAlive{Mode: workloads.Fresh},
//		Link:     link.Config{Delay: 25 * time.Millisecond, Rate: 10e6},
//	}.Run(ctx)
//
// Reference holds the published figures the command's reproduce
// subcommand compares against.
package workloads
