package emutest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/topo"
)

// transcript is what a cluster scenario saw, a line per event with its
// instant (run time since New), safe for several goroutines.
type transcript struct {
	n     *Net
	mu    sync.Mutex
	lines []string
}

func (tr *transcript) say(format string, a ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.lines = append(tr.lines, fmt.Sprintf("%14v  ", tr.n.Elapsed())+fmt.Sprintf(format, a...))
}

// echo serves an echo on host h's port until its listener or its host
// closes, saying what each connection reads.
func echo(tr *transcript, h *Host, port uint16) {
	ln, err := h.Listen(port)
	if err != nil {
		tr.say("%s listen: %v", h, err)
		return
	}
	h.n.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.n.Go(func() {
				defer c.Close()
				b := make([]byte, 64<<10)
				for {
					k, err := c.Read(b)
					if err != nil {
						return
					}
					tr.say("%s echoes %d bytes", h, k)
					if _, err := c.Write(b[:k]); err != nil {
						return
					}
				}
			})
		}
	})
}

// outcome words a connection's error as the test expects it.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "deadline"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, net.ErrClosed):
		return "closed"
	}
	return err.Error()
}

// ping writes size bytes on c and reads them back within wait, saying how
// long it took or how it ended.
func ping(tr *transcript, what string, c net.Conn, size int, wait time.Duration) {
	start := tr.n.Elapsed()
	if _, err := c.Write(make([]byte, size)); err != nil {
		tr.say("%s write: %s", what, outcome(err))
		return
	}
	readBack(tr, what, c, size, wait, start)
}

// readBack reads size bytes on c within wait, saying how long since start
// it took or how it ended.
func readBack(tr *transcript, what string, c net.Conn, size int, wait, start time.Duration) {
	c.SetReadDeadline(tr.n.Now().Add(wait))
	_, err := io.ReadFull(c, make([]byte, size))
	if err != nil {
		tr.say("%s: %s after %v", what, outcome(err), tr.n.Elapsed()-start)
		return
	}
	tr.say("%s: answered in %v", what, tr.n.Elapsed()-start)
}

// clusterFaults shows each fault of a cluster test at its instant, on a
// mesh of three hosts 10 ms apart, and returns what the hosts saw.
func clusterFaults(t *testing.T, n *Net) []string {
	tr := &transcript{n: n}
	n1, n2 := n.Host("n1"), n.Host("n2")
	n.Run(func(ctx context.Context) {
		for _, h := range n.Hosts() {
			echo(tr, h, 7)
		}
		dial := func(from *Host, to string) net.Conn {
			c, err := from.DialContext(ctx, "tcp", to)
			if err != nil {
				t.Fatalf("%s dials %s: %v", from, to, err)
			}
			return c
		}
		c12, c13, c21, c32 := dial(n1, "n2:7"), dial(n1, "n3:7"), dial(n2, "n1:7"), dial(n.Host("n3"), "n2:7")
		defer c13.Close()
		defer c32.Close()

		// 1 s: the path n1–n2 is cut both ways. n1's byte to n2 goes
		// unanswered; n3 answers in a round trip. At 2 s the cut heals,
		// and the byte's next retransmission gets through.
		n.At(ctx, time.Second)
		n.Cut("n1", "n2")
		ping(tr, "n1>n2", c12, 1, 500*time.Millisecond)
		ping(tr, "n1>n3", c13, 1, 500*time.Millisecond)
		n.At(ctx, 2*time.Second)
		n.Heal()
		readBack(tr, "n1>n2 after the heal", c12, 1, time.Second, 2*time.Second)

		// 3 s: cut one way, n1 to n2: n2's byte reaches n1 half a round
		// trip later, and n1's echo never comes back.
		n.At(ctx, 3*time.Second)
		n.CutOneWay("n1", "n2")
		ping(tr, "n2>n1 (n1>n2 cut)", c21, 1, 500*time.Millisecond)
		n.At(ctx, 4*time.Second)
		n.Heal()
		readBack(tr, "n2>n1 after the heal", c21, 1, time.Second, 4*time.Second)

		// 5 s: n3 isolated: nothing reaches it, nothing leaves it; n1
		// and n2 still talk.
		n.At(ctx, 5*time.Second)
		n.Isolate("n3")
		ping(tr, "n1>n3 (n3 isolated)", c13, 1, 300*time.Millisecond)
		ping(tr, "n3>n2 (n3 isolated)", c32, 1, 300*time.Millisecond)
		ping(tr, "n1>n2 (n3 isolated)", c12, 1, 300*time.Millisecond)
		n.At(ctx, 6*time.Second)
		n.Heal()
		readBack(tr, "n3>n2 after the heal", c32, 1, 2*time.Second, 6*time.Second)
		readBack(tr, "n1>n3 after the heal", c13, 1, 2*time.Second, 6*time.Second)

		// 7 s: the link n1-n2 cut in its direction b>a, n2 to n1: n2
		// echoes n1's byte, and the echo is dropped at n2's router.
		n.At(ctx, 7*time.Second)
		n.CutLink("n1-n2", link.BtoA)
		ping(tr, "n1>n2 (link n1-n2 b>a cut)", c12, 1, 300*time.Millisecond)
		n.At(ctx, 7500*time.Millisecond)
		n.HealLink("n1-n2")
		readBack(tr, "n1>n2 after the heal", c12, 1, 2*time.Second, 7500*time.Millisecond)

		// 8 s on: the link n1-n2 changes: 50 ms each way, then 1 Mbit/s
		// (10,000 bytes are 80 ms on the wire), then total loss, then
		// back to 5 ms, each at an instant when no packet of it is due.
		n.At(ctx, 8*time.Second)
		n.SetDelay("n1-n2", 50*time.Millisecond)
		ping(tr, "n1>n2 at 50 ms", c12, 1, time.Second)
		n.At(ctx, 8500*time.Millisecond)
		n.SetRate("n1-n2", 1e6)
		ping(tr, "n1>n2 at 1 Mbit/s, 10,000 bytes", c12, 10000, time.Second)
		n.At(ctx, 9500*time.Millisecond)
		n.SetLoss("n1-n2", 1)
		ping(tr, "n1>n2 at 100% loss", c12, 1, 500*time.Millisecond)
		n.ChangeLink("n1-n2", func(c *link.Config) { *c = link.Config{Delay: 5 * time.Millisecond, MTU: c.MTU, Seed: c.Seed} })
		readBack(tr, "n1>n2 back to 5 ms", c12, 1, 2*time.Second, 10*time.Second)

		// 12 s: n2 crashes. No FIN, no RST: n1's byte goes unanswered
		// until n1's own deadline, and n2's packets stop.
		n.At(ctx, 12*time.Second)
		n.Crash("n2")
		ping(tr, "n1>n2 (n2 crashed)", c12, 1, 2*time.Second)
		if _, err := c21.Write([]byte{1}); err != nil {
			tr.say("n2's own connection: %s", outcome(err))
		}

		// 15 s: n2 restarts, with nothing listening: a new connection is
		// refused after a round trip, and n1's old connection meets a RST
		// at its next retransmission. Once n2 listens, n1 connects.
		n.At(ctx, 15*time.Second)
		n.Restart("n2")
		start := n.Elapsed()
		if _, err := n1.Dial(ctx, "n2:7"); err != nil {
			tr.say("n1 dials n2: %s after %v", outcome(err), n.Elapsed()-start)
		}
		readBack(tr, "n1>n2, the connection of before", c12, 1, 5*time.Second, 15*time.Second)
		echo(tr, n2, 7)
		c := dial(n1, "n2:7")
		defer c.Close()
		ping(tr, "n1>n2, a new connection", c, 1, time.Second)

	})
	for _, f := range n.Faults() {
		tr.lines = append(tr.lines, fmt.Sprintf("fault at %v: %s", f.At, f.What))
	}
	tr.lines = append(tr.lines, fmt.Sprintf("dropped: %+v", n.FaultDrops()))
	return tr.lines
}

// clusterFaultsWant is what the three hosts see on every run, on the
// virtual clock and in a bubble alike.
const clusterFaultsWant = `
          1.5s  n1>n2: deadline after 500ms
        1.505s  n3 echoes 1 bytes
         1.51s  n1>n3: answered in 10ms
  2.745222971s  n2 echoes 1 bytes
  2.750222971s  n1>n2 after the heal: answered in 750.222971ms
        3.005s  n1 echoes 1 bytes
          3.5s  n2>n1 (n1>n2 cut): deadline after 500ms
  4.761222971s  n2>n1 after the heal: answered in 761.222971ms
          5.3s  n1>n3 (n3 isolated): deadline after 300ms
          5.6s  n3>n2 (n3 isolated): deadline after 300ms
        5.605s  n2 echoes 1 bytes
         5.61s  n1>n2 (n3 isolated): answered in 10ms
  6.166019869s  n2 echoes 1 bytes
  6.171019869s  n3>n2 after the heal: answered in 171.019869ms
  6.745222971s  n3 echoes 1 bytes
  6.750222971s  n1>n3 after the heal: answered in 750.222971ms
        7.005s  n2 echoes 1 bytes
          7.3s  n1>n2 (link n1-n2 b>a cut): deadline after 300ms
  7.883230133s  n1>n2 after the heal: answered in 383.230133ms
         8.05s  n2 echoes 1 bytes
          8.1s  n1>n2 at 50 ms: answered in 100ms
        8.562s  n2 echoes 1448 bytes
        8.574s  n2 echoes 1448 bytes
  8.610222971s  n2 echoes 1448 bytes
        8.698s  n2 echoes 1448 bytes
  8.746230133s  n2 echoes 1448 bytes
  8.758230133s  n2 echoes 1448 bytes
     8.820912s  n2 echoes 1312 bytes
     8.881824s  n1>n2 at 1 Mbit/s, 10,000 bytes: answered in 381.824ms
           10s  n1>n2 at 100% loss: deadline after 500ms
 10.265222971s  n2 echoes 1 bytes
 10.270222971s  n1>n2 back to 5 ms: answered in 270.222971ms
           14s  n1>n2 (n2 crashed): deadline after 2s
           14s  n2's own connection: closed
        15.01s  n1 dials n2: refused after 10ms
 17.598222971s  n1>n2, the connection of before: reset after 2.598222971s
 17.613222971s  n2 echoes 1 bytes
 17.618222971s  n1>n2, a new connection: answered in 10ms
fault at 1s: cut n1>n2 n2>n1
fault at 2s: heal
fault at 3s: cut n1>n2
fault at 4s: heal
fault at 5s: isolate n3
fault at 6s: heal
fault at 7s: cut link n1-n2 b>a
fault at 7.5s: heal link n1-n2 a>b b>a
fault at 8s: change link n1-n2: a>b delay 50ms; b>a delay 50ms
fault at 8.5s: change link n1-n2: a>b delay 50ms rate 1mbit; b>a delay 50ms rate 1mbit
fault at 9.5s: change link n1-n2: a>b delay 50ms loss 100% rate 1mbit; b>a delay 50ms loss 100% rate 1mbit
fault at 10s: change link n1-n2: a>b delay 5ms; b>a delay 5ms
fault at 12s: crash n2
fault at 15s: restart n2
dropped: {Cut:24 Down:5}
`

// clusterFaultsHash is the trace's hash of clusterFaults on the virtual
// clock; clusterFaultsBubbleHash in a bubble, where each link direction
// is hashed apart.
const (
	clusterFaultsHash       = "1b04ff2120b0a21b6f9a2f01542ea9d5"
	clusterFaultsBubbleHash = "4b1a21ea4a78a72a29f6ca68b9f87d25"
)

// Each fault of a cluster test falls at its instant, and the hosts see
// the same thing at the same instants on every run, to the nanosecond,
// with the same packets (the trace's hash, which records the faults).
func TestClusterFaults(t *testing.T) {
	for run := range 2 {
		n := New(t, Mesh("n1", "n2", "n3"), RTT(10*time.Millisecond))
		got := strings.TrimSpace(strings.Join(clusterFaults(t, n), "\n"))
		if got != strings.TrimSpace(clusterFaultsWant) {
			t.Errorf("run %d saw:\n%s\nwant:\n%s", run, got, strings.TrimSpace(clusterFaultsWant))
		}
		if h := n.Stats().TraceHash; h != clusterFaultsHash {
			t.Errorf("run %d: trace hash %s; want %s", run, h, clusterFaultsHash)
		}
	}
}

// In a testing/synctest bubble the same scenario gives the same instants.
func TestClusterFaultsInABubble(t *testing.T) {
	for run := range 2 {
		synctest.Test(t, func(t *testing.T) {
			n := New(t, Mesh("n1", "n2", "n3"), RTT(10*time.Millisecond))
			got := strings.TrimSpace(strings.Join(clusterFaults(t, n), "\n"))
			if got != strings.TrimSpace(clusterFaultsWant) {
				t.Errorf("run %d saw:\n%s\nwant:\n%s", run, got, strings.TrimSpace(clusterFaultsWant))
			}
			if h := n.Stats().TraceHash; h != clusterFaultsBubbleHash {
				t.Errorf("run %d: trace hash %s; want %s", run, h, clusterFaultsBubbleHash)
			}
		})
	}
}

// A fault is in the trace even when it moves no packet: a cut between
// two hosts that exchange nothing changes the hash, and the same cut at
// the same instant gives the same hash.
func TestFaultIsInTheTrace(t *testing.T) {
	hash := func(cut bool, at time.Duration) string {
		n := New(t, Mesh("n1", "n2", "n3"), RTT(10*time.Millisecond))
		n.Run(func(ctx context.Context) {
			c, s := n.Host("n1").Pipe(ctx, "n3", 7)
			n.At(ctx, at)
			if cut {
				n.Cut("n1", "n2")
			}
			c.Write([]byte{1})
			s.Read(make([]byte, 1))
		})
		return n.Stats().TraceHash
	}
	plain, cut, again, later := hash(false, time.Second), hash(true, time.Second), hash(true, time.Second), hash(true, 2*time.Second)
	if cut == plain || cut != again || later == cut {
		t.Errorf("hashes: no cut %s, a cut at 1 s %s and %s, at 2 s %s; want the cut's instant in the hash", plain, cut, again, later)
	}
}

// Hosts reach each other by name, through net/http and raw TCP alike,
// and by address; a name no host has is a resolver's "no such host".
func TestHostsByName(t *testing.T) {
	n := New(t, Mesh(Names("n", 3)...), RTT(10*time.Millisecond))
	n1, n2, n3 := n.Host("n1"), n.Host("n2"), n.Host("n3")
	srv := n2.HTTPServer(8080, text("from n2"))
	if got, want := srv.URL(), "http://n2:8080"; got != want {
		t.Errorf("URL %q; want %q", got, want)
	}
	client := n1.HTTPClient()
	n.Run(func(ctx context.Context) {
		start := n.Now()
		if got := body(t, client, srv.URL()+"/"); got != "from n2" {
			t.Errorf("GET from n1: %q", got)
		}
		if got := n.Now().Sub(start); got != 20*time.Millisecond {
			t.Errorf("GET took %v; want two round trips of 10 ms", got)
		}
		c, s := n3.Pipe(ctx, "n1", 0)
		if got, want := c.RemoteAddr().String(), n1.Addr().String(); !strings.HasPrefix(got, want+":") {
			t.Errorf("n3's pipe to n1 reaches %s; want %s", got, want)
		}
		if got, want := s.RemoteAddr().String(), n3.Addr().String(); !strings.HasPrefix(got, want+":") {
			t.Errorf("n1 accepted from %s; want %s", got, want)
		}
		ln, err := n3.Listen(9)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		byAddr, err := n1.Dial(ctx, n3.Addr().String()+":9")
		if err != nil {
			t.Fatalf("dial by address: %v", err)
		}
		byAddr.Close()
		_, err = n1.DialContext(ctx, "tcp", "n4:80")
		var dns *net.DNSError
		if !errors.As(err, &dns) || !dns.IsNotFound {
			t.Errorf("dial n4: %v; want a *net.DNSError that IsNotFound", err)
		}
		if _, err := n1.DialContext(ctx, "udp", "n2:53"); err == nil {
			t.Error("dial udp: no error; want one naming TCP")
		}
	})
	if got, want := n.Topology().Links[3].Label(), "n1-n2"; got != want {
		t.Errorf("the first pair's link is %q; want %q", got, want)
	}
}

// Any topology runs as well; its links carry their own configurations,
// and the link options are refused beside it.
func TestTopologyOption(t *testing.T) {
	star, _ := topo.Star(2, link.Config{Delay: 10 * time.Millisecond})
	n := New(t, Topology(star))
	n.Run(func(ctx context.Context) {
		start := n.Now()
		n.Host("h1").Pipe(ctx, "server", 80)
		if got := n.Now().Sub(start); got != 30*time.Millisecond {
			t.Errorf("a pipe took %v; want 1.5 round trips of 20 ms", got)
		}
	})
	f := newFakeTB(t)
	f.run(func(tb testing.TB) { New(tb, Topology(star), RTT(time.Millisecond)) })
	if got := f.messages(); !strings.Contains(got, "a Topology's links carry their own configurations") {
		t.Errorf("New with a Topology and RTT: %q", got)
	}
	f = newFakeTB(t)
	f.run(func(tb testing.TB) { New(tb, Mesh("alone")) })
	if got := f.messages(); !strings.Contains(got, "want at least two hosts") {
		t.Errorf("New with a Mesh of one host: %q", got)
	}
}

// ExampleMesh's body, run: the request made during the partition fails
// at its own deadline, 1 s after the partition.
func TestPartitionedGETFailsAtItsDeadline(t *testing.T) {
	n := New(t, Mesh("n1", "n2", "n3"), RTT(10*time.Millisecond))
	n.Host("n2").HTTPServer(8080, text("hello"))
	client := n.Host("n1").HTTPClient()
	n.Run(func(ctx context.Context) {
		get := func() error {
			ctx, cancel := n.WithTimeout(ctx, time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://n2:8080/", nil)
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		if err := get(); err != nil {
			t.Fatal(err)
		}
		n.At(ctx, 5*time.Second)
		n.Partition("n2")
		if err := get(); !errors.Is(err, context.DeadlineExceeded) || n.Elapsed() != 6*time.Second {
			t.Errorf("GET during the partition: %v at %v; want the deadline at 6s", err, n.Elapsed())
		}
		if got := n.FaultDrops().Cut; got == 0 {
			t.Error("no packet dropped by the partition")
		}
	})
}
