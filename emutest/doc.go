// Package emutest runs netemu networks inside Go tests: two userspace
// TCP/IP hosts joined by a simulated link, or a cluster of named hosts
// (Mesh, Topology), on a virtual clock, carrying the test's own net/http
// servers and clients or raw TCP.
//
// # A test
//
//	var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//		io.WriteString(w, "hello")
//	})
//
//	func TestGetCostsTwoRoundTrips(t *testing.T) {
//		n := emutest.New(t, emutest.RTT(100*time.Millisecond)) // no Rate: nothing but round trips
//		n.HTTPServer(80, hello)      // on the server host, closed when the test ends
//		client := n.HTTPClient()     // dials through the client host
//		n.Run(func(ctx context.Context) {
//			start := n.Now()         // the run's clock
//			resp, err := client.Get("http://server/")
//			if err != nil {
//				t.Fatal(err)
//			}
//			io.Copy(io.Discard, resp.Body)
//			resp.Body.Close()
//			if got := n.Now().Sub(start); got != 200*time.Millisecond {
//				t.Errorf("GET took %v; want 2 round trips", got)
//			}
//		})
//	}
//
// New builds the network from options (RTT, Rate, DelayedACK, Outage,
// TCP, Seed, or whole configurations with Link and Config), closes it when
// the test ends, and then fails the test if a goroutine outlives it.
// Run runs a function inside the network on the test's goroutine; if the
// run stalls (every goroutine blocked, nothing scheduled) the test fails
// with the virtual instant instead of hanging. Pipe gives both ends of a
// TCP connection; HTTPServer and HTTPClient run net/http over the
// network; WithTimeout and WithDeadline make contexts that end on the
// run's clock.
//
// The helpers that do not need a test (Pipe, NewTransport, Server,
// WithTimeout, WithDeadline) also work on a plain emu.Net or any emu.Env;
// the examples use them that way.
//
// # Clusters
//
// New(t, Mesh("n1", "n2", "n3"), RTT(10*time.Millisecond)) builds a
// full mesh of named hosts, every two joined by a link of their own that
// the link options shape; Topology runs any topo.Topology instead.
// n.Host("n2") is a Host: Dial and DialContext by name ("n3:8300", a
// net.Dialer's shape), Listen (a net.Listener to hand a library),
// HTTPServer and HTTPClient (URLs by host name), Pipe, Env; Resolve is
// the network's name service.
//
// Faults fall at the instant of the call, are recorded in the run's
// trace, and are listed by n.Faults: Cut (a path, both ways), CutOneWay,
// Partition, Isolate, CutLink, HealPath, HealLink, Heal; ChangeLink,
// SetDelay, SetRate, SetLoss; Crash (no FIN, no RST: the peers find out
// by their own timers) and Restart (a new stack at the same address:
// connections refused until it listens again). At(ctx, 10*time.Second)
// sleeps on the run's clock until that instant of the run, so a test
// says "at 10 s, cut the leader from the rest" as
//
//	n.At(ctx, 10*time.Second)
//	n.Partition(leader)
//
// docs/CLUSTERTESTS.md has a raft cluster tested this way.
//
// # Time inside a run
//
// On the virtual clock, run time stands still while any goroutine runs
// and jumps to the next event once all are blocked. Runs therefore take
// little wall time, and the same test gives the same packets at the same
// instants on every run. This holds only if code inside the run reads
// time and waits through the run's clock:
//
//   - use n.Now, n.Sleep, deadlines as n.Now().Add(d), and contexts from
//     WithTimeout, never time.Now, time.Sleep, time.After or
//     context.WithTimeout: wall-clock timers fire at instants of the run
//     nobody can predict, and time.Sleep never wakes while the run is idle;
//   - do not set http.Client.Timeout or http.Server's timeouts: they
//     measure wall time. For an idle timeout use Server.IdleTimeout, which
//     runs on the run's clock (or run the test in a synctest bubble);
//   - start goroutines that act on the network at the same instant with
//     n.Go, which starts them one at a time in call order;
//   - the network runs on until the test ends: read n.Stats inside Run or
//     right after it.
//
// Tests may run in parallel: virtual clocks in one process take turns.
//
// # Inside testing/synctest
//
// Called inside a testing/synctest bubble, New runs the network on the
// bubble's clock: time.Now, time.Sleep, timers, context deadlines,
// http.Client.Timeout, http.Server's timeouts and net.Conn deadlines from
// time.Now all follow the run there, so code under test needs no change
// and the rules above do not apply. The bubble's TCP is netemu's, the
// default; gVisor's TCP and RealClock are refused. A stall is
// synctest's deadlock panic, at once. Pass New the bubble's t.
//
// Outside a bubble, on the virtual clock, a deadline taken from time.Now
// lies decades ahead of the run: it is kept as given, and if the run
// reaches it, reads or writes fail with a *tcpstack.WallDeadlineError
// that says so; time.Now() itself passes at once.
package emutest
