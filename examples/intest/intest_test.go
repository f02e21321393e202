package intest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/netemu/netemu/emutest"
)

func hello(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }

func get(t *testing.T, c *http.Client, url string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// A GET over a fresh connection costs two round trips: the handshake,
// then the request and its response.
func TestGetTakesTwoRoundTrips(t *testing.T) {
	n := emutest.New(t, emutest.RTT(100*time.Millisecond))
	n.HTTPServer(80, http.HandlerFunc(hello))
	client := n.HTTPClient()
	n.Run(func(ctx context.Context) {
		start := n.Now()
		get(t, client, "http://server/")
		if got := n.Now().Sub(start); got != 200*time.Millisecond {
			t.Errorf("GET took %v; want 200ms", got)
		}
	})
}

// Kept-alive connections save the handshake of every request but the
// first. Each case runs in parallel on its own network.
func TestPoolSavesRoundTrips(t *testing.T) {
	for _, c := range []struct {
		keepAlive bool
		want      time.Duration
	}{{false, 2 * time.Second}, {true, 1100 * time.Millisecond}} {
		t.Run(fmt.Sprintf("keepalive=%v", c.keepAlive), func(t *testing.T) {
			t.Parallel()
			n := emutest.New(t, emutest.RTT(100*time.Millisecond))
			n.HTTPServer(80, http.HandlerFunc(hello))
			client := n.HTTPClient()
			client.Transport.(*http.Transport).DisableKeepAlives = !c.keepAlive
			n.Run(func(ctx context.Context) {
				start := n.Now()
				for range 10 {
					get(t, client, "http://server/")
				}
				if got := n.Now().Sub(start); got != c.want {
					t.Errorf("10 GETs took %v; want %v", got, c.want)
				}
			})
		})
	}
}

// With Nagle's algorithm on, a request written in two pieces waits for
// the receiver's delayed ACK, at RTT 0: Linux's TCP_DELACK_MIN, 40 ms,
// which the kernel's timer wheel (netemu's TCP keeps one) rounds up past
// its next 4 ms tick. Coalescing the writes removes the wait.
func TestNagleStall(t *testing.T) {
	n := emutest.New(t)
	n.Run(func(ctx context.Context) {
		client, server := n.Pipe(ctx, 7)
		n.Go(func() {
			buf := make([]byte, 8)
			for {
				if _, err := io.ReadFull(server, buf); err != nil {
					return
				}
				if _, err := server.Write(buf); err != nil {
					return
				}
			}
		})
		client.SetNoDelay(false) // Nagle on
		round := func(write func() error) time.Duration {
			start := n.Now()
			if err := write(); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(client, make([]byte, 8)); err != nil {
				t.Fatal(err)
			}
			return n.Now().Sub(start)
		}
		split := func() error {
			client.Write([]byte("ping"))
			_, err := client.Write([]byte("pong"))
			return err
		}
		bw := bufio.NewWriter(client)
		coalesced := func() error {
			bw.WriteString("pingpong")
			return bw.Flush()
		}
		round(split) // the first round is quick-ACKed
		if got := round(split); got <= 40*time.Millisecond || got > 44*time.Millisecond {
			t.Errorf("split writes: round took %v; want the delayed ACK, over 40 ms and at most 44", got)
		}
		if got := round(coalesced); got != 0 {
			t.Errorf("coalesced write: round took %v; want 0 at RTT 0", got)
		}
		client.Close()
	})
}

// A context timeout on the run's clock ends a slow request exactly on
// time.
func TestTimeoutFiresOnTime(t *testing.T) {
	n := emutest.New(t, emutest.RTT(20*time.Millisecond))
	n.HTTPServer(80, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Sleep(r.Context(), 5*time.Second)
	}))
	client := n.HTTPClient()
	n.Run(func(ctx context.Context) {
		ctx, cancel := n.WithTimeout(ctx, 750*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://server/", nil)
		start := n.Now()
		_, err := client.Do(req)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("slow GET: %v; want context.DeadlineExceeded", err)
		}
		if got := n.Now().Sub(start); got != 750*time.Millisecond {
			t.Errorf("timed out after %v; want exactly 750ms", got)
		}
	})
}
