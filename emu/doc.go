// Package emu wires an emulated network: a client host and a server host
// (gVisor TCP/IP stacks carrying netemu's TCP, or gVisor's; see [tcpstack])
// joined by one simulated link (see [link]), on one clock (see [clock]).
//
//	n, err := emu.New(emu.Config{Link: link.Config{Delay: 25 * time.Millisecond, Rate: 10e6}})
//	if err != nil { ... }
//	defer n.Close()
//	err = n.Run(ctx, func(ctx context.Context) error {
//		ln, _ := n.Listen(80)        // a net.Listener on the server host
//		go http.Serve(ln, handler)
//		c, _ := n.Dial(ctx, 80)      // a net.Conn from the client host
//		start := n.Now()             // the run's clock
//		...
//		elapsed := n.Now().Sub(start)
//		return nil
//	})
//	st := n.Stats()                  // packets, drops by reason, queue peaks, held ACKs, trace hash
//
// On the virtual clock (the default) run time advances only when every
// goroutine of the process is blocked, so a run takes far less wall time
// than it simulates, and the same configuration gives the same packets at
// the same instants on every run, provided the code under test does not
// race with itself and reads time only through the run: Net.Now,
// Net.Sleep, deadlines as Net.Now().Add(d). Start goroutines that act on
// the network at the same instant with Net.Go, which starts them in call
// order. If every goroutine blocks with nothing scheduled, Run returns an
// error wrapping ErrStalled, naming the virtual instant, instead of
// hanging.
//
// A network of another shape, hosts and routers joined by links, is a
// topo.Topology in Config.Topology: every link a whole link.Config, every
// router forwarding by a shortest-path table (package topo), each host
// with its address and one interface. Net.Between(from, to) is the
// network as a workload sees it between two hosts; Net.Host and Net.Link
// reach a host or a link by name; Stats counts every link and router.
// The pair is the topology of two hosts and one link, and runs exactly
// as it did before topologies (the same trace hashes).
//
// Faults act at the instant they are called (faults.go): Cut, CutOneWay
// and HealPath a path between two hosts; Partition, Isolate; CutLink,
// HealLink and ChangeLink a link's direction; Crash a host (its stack
// gone, nothing sent: the peers learn by their own timers) and Restart
// it (a new stack at the same address). Each is recorded in the trace;
// SleepUntil waits for an instant of the run.
//
// Env is the part of Net that workloads use (Listen, Dial, Now, Sleep,
// Go); other backends implement it too. Package
// [github.com/netemu/netemu/emutest] builds networks for Go tests, with
// cleanup, leak checks and net/http helpers.
package emu
