package emutest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
	"github.com/netemu/netemu/workloads/web"
)

// Inside a testing/synctest bubble the network runs on the bubble's
// clock, which the code under test reads through the standard library:
// the timeouts of the issue that brought this in, unchanged, fire at
// exact instants of the run. (On the virtual clock outside a bubble the
// first waits for a wall-clock second and ends as a stall, the second is
// answered after 10 s, and the deadline lies 27 years ahead.)
func TestBubbleTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rtt = 100 * time.Millisecond
		n := New(t, RTT(rtt))
		if got := n.Config().TCP.Impl.OrDefault(); got != tcpstack.Netemu || n.Config().Clock != emu.Bubble {
			t.Fatalf("clock %v, TCP %q; want the bubble's clock and netemu's TCP", n.Config().Clock, got)
		}
		srv := n.HTTPServer(80, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/never":
				<-r.Context().Done()
			case "/late":
				time.Sleep(10 * time.Second)
				io.WriteString(w, "late")
			}
		}))
		n.Run(func(ctx context.Context) {
			timed := func(what string, f func() error, want time.Duration) {
				t.Helper()
				start := time.Now()
				err := f()
				if got := time.Since(start); err == nil || got != want {
					t.Errorf("%s: %v after %v; want an error after exactly %v", what, err, got, want)
				}
			}
			client := &http.Client{Transport: NewTransport(n), Timeout: 5 * time.Second}
			defer client.CloseIdleConnections()
			get := func(c *http.Client, req *http.Request) error {
				resp, err := c.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				return err
			}
			never, _ := http.NewRequest("GET", srv.URL()+"/never", nil)
			late, _ := http.NewRequest("GET", srv.URL()+"/late", nil)
			timed("http.Client.Timeout of 5 s, a server that never answers", func() error { return get(client, never) }, 5*time.Second)
			timed("http.Client.Timeout of 5 s, a server that answers after 10 s", func() error { return get(client, late) }, 5*time.Second)
			plain := &http.Client{Transport: NewTransport(n)}
			defer plain.CloseIdleConnections()
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			timed("context.WithTimeout of 5 s", func() error { return get(plain, never.WithContext(cctx)) }, 5*time.Second)

			c, s := n.Pipe(ctx, 81)
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			timed("a read deadline of time.Now() + 2 s", func() error {
				_, err := c.Read(make([]byte, 1))
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("read past its deadline: %v; want os.ErrDeadlineExceeded", err)
				}
				return err
			}, 2*time.Second)
			c.Close()
			s.Close()
		})
	})
}

// http.Server's own timeouts run on the bubble's clock: a client that
// sends half a request sees the server close the connection
// ReadHeaderTimeout after the server accepted it, half a round trip
// later.
func TestBubbleServerTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rtt = 100 * time.Millisecond
		n := New(t, RTT(rtt))
		ln, err := n.Listen(80)
		if err != nil {
			t.Fatal(err)
		}
		hs := &http.Server{ReadHeaderTimeout: 3 * time.Second, Handler: http.NotFoundHandler()}
		served := make(chan struct{})
		go func() { defer close(served); hs.Serve(ln) }()
		n.Run(func(ctx context.Context) {
			start := time.Now()
			c, err := n.Dial(ctx, 80)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "GET / HTTP/1.1\r\n")
			_, err = c.Read(make([]byte, 1))
			// Connected after 1 RTT; the server accepts when the
			// handshake's last ACK arrives, half an RTT later, and its
			// FIN takes half an RTT back.
			if got, want := time.Since(start), rtt+rtt/2+3*time.Second+rtt/2; err != io.EOF || got != want {
				t.Errorf("read: %v after %v; want EOF after %v", err, got, want)
			}
		})
		hs.Close()
		<-served
	})
}

// A GET inside a bubble takes what it takes on the virtual clock, to the
// nanosecond: two round trips and the serialization of every packet at
// the link's rate.
func TestBubbleGETMatchesVirtualClock(t *testing.T) {
	const rtt = 100 * time.Millisecond
	get := func(t *testing.T, n *Net, now func() time.Time) time.Duration {
		n.HTTPServer(80, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(bytes.Repeat([]byte("x"), 20000))
		}))
		client := &http.Client{Transport: NewTransport(n)}
		defer client.CloseIdleConnections()
		var took time.Duration
		n.Run(func(ctx context.Context) {
			start := now()
			resp, err := client.Get("http://server/")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took = now().Sub(start)
		})
		return took
	}
	var inBubble time.Duration
	synctest.Test(t, func(t *testing.T) {
		n := New(t, RTT(rtt), Rate(10e6))
		inBubble = get(t, n, time.Now)
	})
	n := New(t, RTT(rtt), Rate(10e6), TCPImpl(tcpstack.Netemu))
	virtual := get(t, n, n.Now)
	if inBubble != virtual || inBubble <= 2*rtt+20000*8*time.Second/10e6 {
		t.Errorf("a GET of 20000 bytes over %v and 10 Mbit/s took %v in a bubble, %v on the virtual clock; want the same, more than 2 RTT and the body's serialization", rtt, inBubble, virtual)
	}
}

// A thousand connections at once, each a round trip of one byte: every
// one connects in one round trip and is answered in the next.
func TestBubbleThousandConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rtt = 100 * time.Millisecond
		n := New(t, RTT(rtt))
		ln, err := n.Listen(80)
		if err != nil {
			t.Fatal(err)
		}
		var echoes sync.WaitGroup
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				echoes.Add(1)
				go func() {
					defer echoes.Done()
					defer c.Close()
					io.Copy(c, c)
				}()
			}
		}()
		n.Run(func(ctx context.Context) {
			var wg sync.WaitGroup
			took := make([]time.Duration, 1000)
			for i := range took {
				wg.Go(func() {
					start := time.Now()
					c, err := n.Dial(ctx, 80)
					if err != nil {
						t.Error(err)
						return
					}
					defer c.Close()
					b := []byte{byte(i)}
					if _, err := c.Write(b); err != nil {
						t.Error(err)
						return
					}
					if _, err := io.ReadFull(c, b); err != nil || b[0] != byte(i) {
						t.Errorf("connection %d: read %v, %v", i, b, err)
					}
					took[i] = time.Since(start)
				})
			}
			wg.Wait()
			for i, d := range took {
				if d != 2*rtt {
					t.Errorf("connection %d took %v; want 2 round trips, %v", i, d, 2*rtt)
					break
				}
			}
		})
		ln.Close()
		echoes.Wait()
	})
}

// Loss and reordering inside a bubble: a 1 MiB transfer arrives intact,
// and every run gives the same packets at the same instants (one trace
// hash), as on the virtual clock.
func TestBubbleLossAndReordering(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	want := sha256.Sum256(data)
	var first emu.Stats
	for run := range 5 {
		synctest.Test(t, func(t *testing.T) {
			n := New(t, Rate(20e6), Netem("delay 25ms reorder 25% 50% loss 2%"), Seed(7))
			n.Run(func(ctx context.Context) {
				c, s := n.Pipe(ctx, 80)
				go func() {
					s.Write(data)
					s.Close()
				}()
				h := sha256.New()
				if _, err := io.Copy(h, c); err != nil {
					t.Fatal(err)
				}
				c.Close()
				if !bytes.Equal(h.Sum(nil), want[:]) {
					t.Fatalf("run %d: the data arrived changed", run)
				}
			})
			st := n.Stats()
			down := st.Link[link.BtoA]
			if down.Drops.Total() == 0 || down.Reordered == 0 {
				t.Errorf("run %d: %d packets lost, %d reordered; want some of each", run, down.Drops.Total(), down.Reordered)
			}
			if run == 0 {
				first = st
			} else if st.TraceHash != first.TraceHash {
				t.Errorf("run %d: trace %s; the first run's was %s", run, st.TraceHash[:16], first.TraceHash[:16])
			}
		})
	}
}

// gVisor's TCP cannot run in a bubble, nor can the real clock: New says
// so in one line.
func TestBubbleRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			opt  Option
			want string
		}{
			{TCPImpl(tcpstack.GVisor), "emutest.New: emu: gVisor's TCP cannot run in a testing/synctest bubble (its goroutines never block durably, so the bubble's time would never move); use netemu's TCP, the default (leave Impl unset or set tcpstack.Netemu)"},
			{RealClock(), "emutest.New: the real clock inside a testing/synctest bubble: the network runs on the bubble's clock there; drop RealClock (or Config's Clock)"},
			{Config(emu.Config{Clock: emu.Real}), "emutest.New: the real clock inside a testing/synctest bubble: the network runs on the bubble's clock there; drop RealClock (or Config's Clock)"},
		} {
			f := newFakeTB(t)
			reached := false
			f.run(func(tb testing.TB) {
				New(tb, c.opt)
				reached = true
			})
			if reached || f.messages() != c.want {
				t.Errorf("New in a bubble: returned %v, reported %q; want it to stop with %q", reached, f.messages(), c.want)
			}
		}
	})
}

// Outside a bubble, on the virtual clock, a deadline from the wall clock
// lies decades ahead of the run (its clock starts in 2000). It is armed
// as given, so that code setting such deadlines while traffic flows
// works as before (an http.Server with production timeouts serves), and
// when the run's clock reaches it the error says where it came from.
// time.Now() itself passes at once, as callers who interrupt a blocked
// read with it mean. A deadline from the run's clock works as ever.
func TestWallClockDeadlines(t *testing.T) {
	n := New(t, RTT(100*time.Millisecond), TCPImpl(tcpstack.Netemu))
	ln, err := n.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	served := make(chan struct{})
	go func() { defer close(served); hs.Serve(ln) }()
	client := &http.Client{Transport: NewTransport(n)}
	n.Run(func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://server/", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET from an http.Server with timeouts: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Errorf("GET: %q; want ok", b)
		}
		client.CloseIdleConnections()

		c, s := n.Pipe(ctx, 81)
		defer c.Close()
		defer s.Close()
		var we *tcpstack.WallDeadlineError
		start := n.Now()
		c.SetReadDeadline(time.Now())
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &we) || n.Now() != start {
			t.Errorf("read under a deadline of time.Now(): %v after %v; want os.ErrDeadlineExceeded at once", err, n.Now().Sub(start))
		}
		// Deadlines of the run's clock, however far (20 years ahead lies
		// nearer today's date than the run's 2000), pass when they are
		// due, as plain deadlines: they carry no monotonic reading, which
		// every time.Now() does. The last leaves the run in 2020.
		for _, d := range []time.Duration{2 * time.Second, 20 * 365 * 24 * time.Hour} {
			start = n.Now()
			c.SetReadDeadline(n.Now().Add(d))
			_, err = c.Read(make([]byte, 1))
			if !errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &we) || n.Now().Sub(start) != d {
				t.Errorf("read under a deadline %v ahead on the run's clock: %v after %v; want os.ErrDeadlineExceeded after %v", d, err, n.Now().Sub(start), d)
			}
		}
		deadline := time.Now().Add(2 * time.Second)
		c.SetReadDeadline(deadline)
		_, err = c.Read(make([]byte, 1))
		if !errors.As(err, &we) || !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "taken from the wall clock") || !n.Now().Equal(deadline) {
			t.Errorf("read under a deadline of time.Now() + 2 s: %v at %v; want a *tcpstack.WallDeadlineError (a deadline exceeded) when the run reaches it, %v", err, n.Now(), deadline)
		}
	})
	hs.Close()
	<-served
}

// New finds the bubble from any goroutine of it, without waiting on the
// others: here one builds the network while the test's goroutine waits
// in synctest.Wait, and another goroutine of the bubble is blocked on a
// channel made outside it (not a durable block).
func TestBubbleFoundFromAnyGoroutine(t *testing.T) {
	outside := make(chan struct{})
	synctest.Test(t, func(t *testing.T) {
		go func() { <-outside }()
		var n *Net
		go func() { n = New(t, RTT(100*time.Millisecond)) }()
		close(outside)
		synctest.Wait()
		if n == nil || n.Config().Clock != emu.Bubble || n.Config().TCP.Impl.OrDefault() != tcpstack.Netemu {
			t.Fatalf("network built on another goroutine: %+v; want the bubble's clock and netemu's TCP", n)
		}
	})
}

// DNS and HTTP/3 (quic-go) over the hosts' UDP run inside a bubble, where
// quic-go's own clock (time.Now, Go's timers) is the run's, so a page
// load follows the link: never under the DNS lookup, QUIC's handshake and
// the request (three round trips) plus the page's bytes at the link's
// rate. Runs do not all agree: quic-go's goroutines pick among events
// ready at one instant at random (its select statements), and the page
// load spreads by about a millisecond in 270 (logged).
func TestBubbleHTTP3(t *testing.T) {
	const rtt, rate = 50 * time.Millisecond, 10e6
	floor := 3*rtt + time.Duration(float64(workloads.DefaultPageTotal)*8/rate*float64(time.Second))
	var took []time.Duration
	for run := range 20 {
		synctest.Test(t, func(t *testing.T) {
			n := New(t, RTT(rtt), Rate(rate))
			n.Run(func(ctx context.Context) {
				r, err := workloads.Run(ctx, workloads.Page{Proto: web.H3, DNS: true}, n, workloads.Path{})
				if err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				if r.Elapsed < floor {
					t.Errorf("run %d: the page took %v; want at least %v", run, r.Elapsed, floor)
				}
				took = append(took, r.Elapsed)
			})
		})
	}
	slices.Sort(took)
	t.Logf("20 page loads over HTTP/3 at %v and 10 Mbit/s: %v to %v, median %v", rtt, took[0], took[len(took)-1], took[len(took)/2])
}

// A goroutine of the bubble blocked outside the bubble's reach (here on a
// channel made outside it) stops the bubble's time; the teardown does not
// sleep on it, so the cleanup registered before New that frees it runs.
func TestBubbleTeardownBesideABlockedGoroutine(t *testing.T) {
	outside := make(chan struct{})
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		go func() { <-outside; close(done) }()
		t.Cleanup(func() { close(outside); <-done })
		New(t, RTT(time.Millisecond))
	})
}
