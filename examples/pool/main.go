// Command pool shows what a connection pool saves: 20 sequential HTTP
// requests at 100 ms RTT, each on a fresh connection (a handshake per
// request) or all on one kept-alive connection, and with a server that
// closes idle connections after 300 ms while the client pauses 500 ms
// between requests (the pool cannot help).
//
//	go run ./examples/pool
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/emutest"
	"github.com/netemu/netemu/link"
)

const (
	rtt      = 100 * time.Millisecond
	requests = 20
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pool:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	fmt.Fprintf(w, "%d sequential GETs at %v RTT\n", requests, rtt)
	fmt.Fprintf(w, "%-42s %12s %12s %6s\n", "", "per request", "round trips", "conns")
	for _, c := range []struct {
		name        string
		keepAlive   bool
		idleTimeout time.Duration
		pause       time.Duration
	}{
		{"fresh connection per request", false, 0, 0},
		{"pooled (keep-alive)", true, 0, 0},
		{"pooled, 500ms pauses, 300ms idle timeout", true, 300 * time.Millisecond, 500 * time.Millisecond},
	} {
		perRequest, conns, err := measure(c.keepAlive, c.idleTimeout, c.pause)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-42s %12v %12.1f %6d\n", c.name, perRequest, float64(perRequest)/float64(rtt), conns)
	}
	return nil
}

// measure returns the mean time per request, pauses excluded, and the
// connections the server accepted.
func measure(keepAlive bool, idleTimeout, pause time.Duration) (time.Duration, int, error) {
	n, err := emu.New(emu.Config{Link: link.Config{Delay: rtt / 2}})
	if err != nil {
		return 0, 0, err
	}
	defer n.Close()
	var total time.Duration
	srv := &emutest.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}), IdleTimeout: idleTimeout}
	err = n.Run(context.Background(), func(ctx context.Context) error {
		if err := srv.Start(n); err != nil {
			return err
		}
		defer srv.Close()
		tr := emutest.NewTransport(n)
		tr.DisableKeepAlives = !keepAlive
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		for range requests {
			if err := n.Sleep(ctx, pause); err != nil {
				return err
			}
			start := n.Now()
			resp, err := client.Get("http://server/")
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			total += n.Now().Sub(start)
		}
		return nil
	})
	return total / requests, srv.Conns(), err
}
