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
// clock. Run runs one workload on an env:
//
//	n, err := emu.New(emu.Config{Link: link.Config{Delay: 25 * time.Millisecond, Rate: 10e6}})
//	...
//	err = n.Run(ctx, func(ctx context.Context) error {
//		r, err := workloads.Run(ctx, workloads.KeepAlive{Mode: workloads.Fresh}, n, workloads.Path{RTT: 50 * time.Millisecond, Rate: 10e6})
//		...
//	})
//
// The HTTP workloads speak through package web, which holds the
// protocols (h1, h1s, h2, h2c, h3), TLS, DNS and per-request timings. A
// workload that needs more of the network than every backend gives (the
// real clock, kernel TCP) declares it (Needs). Reference holds the
// published figures the command's reproduce subcommand compares against.
package workloads
