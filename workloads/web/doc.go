// Package web is the HTTP the workloads speak over an emu.Env: a server
// host serving files and a client fetching them, over one of the
// registered protocols (h1, h1s, h2, h2c, h3), with TLS, DNS and
// per-request timings. What it sends is drawn from the run's seed and
// clock, so on the virtual clock the same Site gives the same packets
// every run; a protocol that reads Go's time itself (WallClock) runs
// only where that time is the run's.
//
// A protocol is one file that implements Protocol and one line in
// protocols (protocol.go); flags, variants, models, records and the
// refusal of a clock it cannot run on follow from what it declares.
package web
