package raftexample

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/netemu/netemu/emutest"
)

// A failure detector of ours on the same cluster: each node tells every
// other it is alive every 100 ms over TCP, holds a peer alive while it
// heard from it within 300 ms, and takes as leader the first name, in
// order, among itself and the peers it holds alive. It reads the
// standard library's clock and timers, which in the bubble are the
// run's, and nothing in it is random: every instant below is exact, on
// every run, and so are the packets (the trace's hash).
//
// The nodes tick 7 ms apart (n1 on the 100 ms, n2 7 ms later, n3 14 ms
// later), so that no two of them act at one instant: two goroutines
// woken by their own timers at one instant run in either order, and so
// would their packets.
func TestDetectorPartitionAndHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := emutest.New(t, emutest.Mesh("n1", "n2", "n3"), emutest.RTT(rtt))
		d := startDetectors(t, n)
		var hash string
		n.Run(func(ctx context.Context) {
			n.At(ctx, 10050*time.Millisecond)
			n.Partition("n1")
			n.At(ctx, 30050*time.Millisecond)
			n.Heal()
			n.At(ctx, 60*time.Second)
			hash = n.Stats().TraceHash // before the detectors stop, which closes their connections at one instant
		})
		d.stop()
		if got := strings.TrimSpace(d.transcript()); got != strings.TrimSpace(detectorWant) {
			t.Errorf("the detectors saw:\n%s\nwant:\n%s", got, strings.TrimSpace(detectorWant))
		}
		if got := hash; got != detectorHash {
			t.Errorf("trace hash %s; want %s", got, detectorHash)
		}
	})
}

// What the detectors see. n1 is cut off at 10.05 s, between ticks. Its
// last heartbeat left at 10 s and reached n2 at 10.005 s: n2's tick at
// 10.307 s is the first to find it silent for 300 ms (10.207 s found
// 202 ms), n3's at 10.314 s. n1 heard n2 last at 10.012 s and n3 at
// 10.019 s, and gives up on both at its tick of 10.4 s. The heal at
// 30.05 s lets the next tick's redials through: n1's dial at 30.1 s
// connects a round trip later and its heartbeat reaches n2 at 30.115 s,
// heard at n2's tick of 30.207 s; n2's dial at 30.107 s gets its
// heartbeat to n1 by 30.122 s, heard at n1's tick of 30.2 s.
const detectorWant = `
       200ms  n1: hears n2
       200ms  n1: hears n3
       207ms  n2: hears n1
       207ms  n2: hears n3
       207ms  n2: leader n1 (was n2)
       214ms  n3: hears n1
       214ms  n3: hears n2
       214ms  n3: leader n1 (was n3)
     10.307s  n2: n1 silent
     10.307s  n2: leader n2 (was n1)
     10.314s  n3: n1 silent
     10.314s  n3: leader n2 (was n1)
       10.4s  n1: n2 silent
       10.4s  n1: n3 silent
       30.2s  n1: hears n2
       30.2s  n1: hears n3
     30.207s  n2: hears n1
     30.207s  n2: leader n1 (was n2)
     30.214s  n3: hears n1
     30.214s  n3: leader n1 (was n2)
`

const detectorHash = "47f8c070f012bd528cf13488103658f3"

// detectors runs a detector on each host of a network.
type detectors struct {
	n      *emutest.Net
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	lines []string
}

// say adds a line to the transcript, at the instant of the call.
func (d *detectors) say(format string, a ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lines = append(d.lines, fmt.Sprintf("%12v  ", d.n.Elapsed())+fmt.Sprintf(format, a...))
}

func (d *detectors) transcript() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.lines, "\n")
}

// stop ends the detectors and waits for their loops.
func (d *detectors) stop() {
	d.cancel()
	d.wg.Wait()
}

const (
	detectorPort = 7946
	tick         = 100 * time.Millisecond
	silence      = 300 * time.Millisecond
)

// startDetectors starts a detector on each host of n.
func startDetectors(t *testing.T, n *emutest.Net) *detectors {
	ctx, cancel := context.WithCancel(context.Background())
	d := &detectors{n: n, cancel: cancel}
	t.Cleanup(d.stop)
	var names []string
	for _, h := range n.Hosts() {
		names = append(names, h.Name())
	}
	for i, h := range n.Hosts() {
		ln, err := h.Listen(detectorPort)
		if err != nil {
			t.Fatal(err)
		}
		nd := &detector{d: d, host: h, names: names, heard: map[string]time.Time{}, conns: map[string]net.Conn{}, up: map[string]bool{}, leader: h.Name()}
		d.wg.Add(2)
		go func() {
			defer d.wg.Done()
			nd.accept(ctx, ln)
		}()
		go func() {
			defer d.wg.Done()
			nd.run(ctx, time.Duration(i)*7*time.Millisecond)
		}()
	}
	return d
}

// detector is one node's.
type detector struct {
	d     *detectors
	host  *emutest.Host
	names []string

	mu     sync.Mutex
	heard  map[string]time.Time // when each peer's heartbeat last came
	conns  map[string]net.Conn  // to each peer; nil while redialing
	up     map[string]bool      // each peer alive at the last tick
	leader string
}

// accept reads the heartbeats of each peer that dials in, until ctx
// ends.
func (nd *detector) accept(ctx context.Context, ln net.Listener) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var readers sync.WaitGroup
	defer readers.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		context.AfterFunc(ctx, func() { c.Close() })
		readers.Add(1)
		go func() {
			defer readers.Done()
			defer c.Close()
			s := bufio.NewScanner(c)
			for s.Scan() {
				nd.mu.Lock()
				nd.heard[s.Text()] = time.Now()
				nd.mu.Unlock()
			}
		}()
	}
}

// run ticks every 100 ms from offset: it sends each peer a heartbeat,
// redialing a peer it holds dead, and updates its leader.
func (nd *detector) run(ctx context.Context, offset time.Duration) {
	defer func() {
		for _, c := range nd.conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	time.Sleep(offset)
	tk := time.NewTicker(tick)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		nd.elect()
		for _, peer := range nd.names {
			if peer != nd.host.Name() {
				nd.beat(ctx, peer)
			}
		}
	}
}

// beat sends peer a heartbeat on a connection of the moment. A peer
// silent for 300 ms loses its connection: its writes would wait behind
// TCP's retransmissions, so a fresh dial, within one tick, takes over.
func (nd *detector) beat(ctx context.Context, peer string) {
	c := nd.conns[peer]
	if c != nil && !nd.alive(peer) {
		c.Close()
		c = nil
	}
	if c == nil {
		dctx, cancel := context.WithTimeout(ctx, tick-time.Millisecond)
		var err error
		c, err = nd.host.DialContext(dctx, "tcp", fmt.Sprintf("%s:%d", peer, detectorPort))
		cancel()
		if err != nil {
			nd.conns[peer] = nil
			return
		}
	}
	nd.conns[peer] = c
	if _, err := fmt.Fprintf(c, "%s\n", nd.host.Name()); err != nil {
		c.Close()
		nd.conns[peer] = nil
	}
}

// alive reports whether peer was heard within 300 ms.
func (nd *detector) alive(peer string) bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	at, ok := nd.heard[peer]
	return ok && time.Since(at) < silence
}

// elect takes the first name among itself and the peers alive, and says
// when a peer falls silent or comes back, and when the leader changes.
func (nd *detector) elect() {
	leader := nd.host.Name()
	for _, peer := range nd.names {
		if peer == nd.host.Name() {
			continue
		}
		alive := nd.alive(peer)
		if alive != nd.up[peer] {
			nd.up[peer] = alive
			if alive {
				nd.d.say("%s: hears %s", nd.host.Name(), peer)
			} else {
				nd.d.say("%s: %s silent", nd.host.Name(), peer)
			}
		}
		if alive && peer < leader {
			leader = peer
		}
	}
	if leader != nd.leader {
		nd.d.say("%s: leader %s (was %s)", nd.host.Name(), leader, nd.leader)
		nd.leader = leader
	}
}
