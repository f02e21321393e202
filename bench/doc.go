// Package bench holds netemu's benchmarks and its accuracy report.
//
// The benchmarks (go test -bench . ./bench/...) report, with
// b.ReportMetric, how fast the emulator is:
//
//   - BenchmarkRealGoodput: bytes through the emulated hosts on the real
//     clock over an unshaped link at MTU 1500, next to kernel loopback TCP
//     moving the same bytes in the same run, and their ratio;
//   - BenchmarkVirtualBulk and BenchmarkReproduceSuite: simulated seconds
//     per wall second for the 5 MiB bulk download at 5 mbit / 50 ms, and
//     the wall time of every reference case (netemu reproduce);
//   - BenchmarkSchedulerEvents and BenchmarkEventsInRun: events per wall
//     second of the virtual clock alone, and with two idle hosts in the
//     run; BenchmarkVirtualTimers: its Now and timer re-arming;
//   - BenchmarkLinkPacket: allocations and bytes per packet on the link's
//     own path, on a hand-driven clock;
//   - BenchmarkIdleConns: memory per connection with 1,000 idle
//     connections;
//   - BenchmarkTopologyPacket and BenchmarkIdleHost: CPU per link
//     crossing on the pair and on stars of 10 and 100 hosts, and the
//     memory of an idle host; BenchmarkMeshIdle: a 5-host mesh of idle
//     connections, which should cost no CPU between events;
//   - BenchmarkBBRvsCubic: CPU per packet of a BBR bulk run against a
//     CUBIC one on the same link, in the same run.
//
// docs/PERFORMANCE.md has the figures and the machine. The script
// bench/against compares a commit's benchmarks with the working tree's
// in one alternating run (bench/against HEAD~1), so that a change can say
// what it cost. The accuracy report is a command: go run ./bench/accuracy
// > docs/ACCURACY.md.
package bench
