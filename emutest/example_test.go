package emutest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/emutest"
	"github.com/netemu/netemu/link"
)

// hello serves a short greeting.
var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	fmt.Fprint(w, "hello")
})

// A test builds its network with New, which closes it when the test ends
// and fails the test if a goroutine outlives it. Inside Run, time is the
// run's: a GET over a fresh connection at 100 ms RTT takes exactly two
// round trips, on every run and every machine. (With Rate(10e6) it would
// take 200.4288ms: each packet also spends its size ÷ rate on the wire.)
//
// This is the body of TestGetCostsTwoRoundTrips in the README, whose own
// test keeps the two the same and runs that test. The example itself
// does not run: it needs the test's *testing.T.
func ExampleNew() {
	var t *testing.T // the test's

	n := emutest.New(t, emutest.RTT(100*time.Millisecond)) // no Rate: nothing but round trips
	n.HTTPServer(80, hello)                                // on the server host, closed when the test ends
	client := n.HTTPClient()                               // an *http.Client that dials through the client host
	n.Run(func(ctx context.Context) {                      // on the test's goroutine: t.Fatal works here
		start := n.Now() // the run's clock, not time.Now
		resp, err := client.Get("http://server/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := n.Now().Sub(start); got != 200*time.Millisecond {
			t.Errorf("GET took %v; want 2 round trips", got)
		}
	})
}

// Measure an HTTP GET at 100 ms RTT: a round trip for the TCP handshake,
// one for the request and its response.
func Example_httpGet() {
	n, err := emu.New(emu.Config{Link: link.Config{Delay: 50 * time.Millisecond}})
	if err != nil {
		log.Fatal(err)
	}
	defer n.Close()
	err = n.Run(context.Background(), func(ctx context.Context) error {
		srv := &emutest.Server{Handler: hello}
		if err := srv.Start(n); err != nil {
			return err
		}
		defer srv.Close()
		tr := emutest.NewTransport(n)
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}

		for i := range 2 {
			start := n.Now()
			resp, err := client.Get("http://server/")
			if err != nil {
				return err
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			fmt.Printf("GET %d: %s %q in %v\n", i+1, resp.Status, body, n.Now().Sub(start))
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// GET 1: 200 OK "hello" in 200ms
	// GET 2: 200 OK "hello" in 100ms
}

// A connection pool saves a round trip per request: ten sequential GETs
// at 100 ms RTT take 20 round trips on fresh connections and 11 (one
// handshake, then one per request) on a pooled one.
func Example_connectionPool() {
	const rtt = 100 * time.Millisecond
	for _, pooled := range []bool{false, true} {
		n, err := emu.New(emu.Config{Link: link.Config{Delay: rtt / 2}})
		if err != nil {
			log.Fatal(err)
		}
		err = n.Run(context.Background(), func(ctx context.Context) error {
			srv := &emutest.Server{Handler: hello}
			if err := srv.Start(n); err != nil {
				return err
			}
			defer srv.Close()
			tr := emutest.NewTransport(n)
			tr.DisableKeepAlives = !pooled
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}

			start := n.Now()
			for range 10 {
				resp, err := client.Get("http://server/")
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			elapsed := n.Now().Sub(start)
			fmt.Printf("pooled %-5v: 10 GETs in %v, %g round trips, connections opened: %d\n",
				pooled, elapsed, float64(elapsed)/float64(rtt), srv.Conns())
			return nil
		})
		n.Close()
		if err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// pooled false: 10 GETs in 2s, 20 round trips, connections opened: 10
	// pooled true : 10 GETs in 1.1s, 11 round trips, connections opened: 1
}

// Reproduce the Nagle stall: a client that writes a request in two small
// pieces, with Nagle's algorithm on, holds the second piece until the
// first is acknowledged, and a Linux receiver (netemu's TCP is one)
// delays that ACK by TCP_DELACK_MIN, 40 ms, which the kernel's timer
// wheel rounds up past its next 4 ms tick. Coalescing the writes (here
// with bufio) or SetNoDelay(true) removes the stall. The link runs at
// RTT 0, so every millisecond shown is a delayed-ACK wait.
func Example_nagleStall() {
	n, err := emu.New(emu.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer n.Close()
	err = n.Run(context.Background(), func(ctx context.Context) error {
		for _, mode := range []string{"nagle, split", "nagle, coalesced", "nodelay, split"} {
			client, server, err := emutest.Pipe(ctx, n, 0) // 0: any free port
			if err != nil {
				return err
			}
			go func() { // answers each 8-byte request with 8 bytes
				defer server.Close()
				buf := make([]byte, 8)
				for {
					if _, err := io.ReadFull(server, buf); err != nil {
						return
					}
					if _, err := server.Write(buf); err != nil {
						return
					}
				}
			}()
			client.SetNoDelay(mode == "nodelay, split")
			bw := bufio.NewWriter(client)
			var rounds []time.Duration
			for range 4 {
				start := n.Now()
				if mode == "nagle, coalesced" {
					bw.WriteString("ping")
					bw.WriteString("pong")
					err = bw.Flush()
				} else {
					client.Write([]byte("ping"))
					_, err = client.Write([]byte("pong"))
				}
				if err == nil {
					_, err = io.ReadFull(client, make([]byte, 8))
				}
				if err != nil {
					return err
				}
				rounds = append(rounds, n.Now().Sub(start))
			}
			client.Close()
			fmt.Printf("%-16s rounds %v\n", mode+":", rounds)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// nagle, split:    rounds [0s 42.287047ms 44ms 44ms]
	// nagle, coalesced: rounds [0s 0s 0s 0s]
	// nodelay, split:  rounds [0s 0s 0s 0s]
}

// A context timeout fires at exactly the instant of the run it names:
// the handler takes a second, the client gives up after 300 ms.
// context.WithTimeout would measure wall time instead, which a virtual run
// does not follow.
func ExampleWithTimeout() {
	n, err := emu.New(emu.Config{Link: link.Config{Delay: 10 * time.Millisecond}})
	if err != nil {
		log.Fatal(err)
	}
	defer n.Close()
	err = n.Run(context.Background(), func(ctx context.Context) error {
		srv := &emutest.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Sleep(r.Context(), time.Second) // a slow backend
			fmt.Fprint(w, "late")
		})}
		if err := srv.Start(n); err != nil {
			return err
		}
		defer srv.Close()
		tr := emutest.NewTransport(n)
		defer tr.CloseIdleConnections()

		ctx, cancel := emutest.WithTimeout(ctx, n.Clock(), 300*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://server/", nil)
		if err != nil {
			return err
		}
		start := n.Now()
		_, err = (&http.Client{Transport: tr}).Do(req)
		fmt.Printf("after %v: deadline exceeded: %v\n", n.Now().Sub(start), errors.Is(err, context.DeadlineExceeded))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// after 300ms: deadline exceeded: true
}

// A cluster: three named hosts, every two 10 ms apart. A client on n1
// reaches n2 by name; at 5 s the test cuts n2 from the rest, and n1's
// next request fails at its own deadline, exactly 1 s later.
//
// The example does not run: it needs the test's *testing.T.
func ExampleMesh() {
	var t *testing.T // the test's

	n := emutest.New(t, emutest.Mesh("n1", "n2", "n3"), emutest.RTT(10*time.Millisecond))
	n.Host("n2").HTTPServer(8080, hello) // http://n2:8080
	client := n.Host("n1").HTTPClient()  // dials by name, from n1
	n.Run(func(ctx context.Context) {
		get := func() error {
			ctx, cancel := n.WithTimeout(ctx, time.Second) // on the run's clock
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
		n.At(ctx, 5*time.Second) // sleeps on the run's clock until 5 s after New
		n.Partition("n2")        // n2 on one side, n1 and n3 on the other
		if err := get(); !errors.Is(err, context.DeadlineExceeded) || n.Elapsed() != 6*time.Second {
			t.Errorf("GET during the partition: %v at %v; want the deadline at 6s", err, n.Elapsed())
		}
	})
}
