// Command httpget measures an HTTP GET over an emulated link: a 100 KB
// response at 10 Mbit/s, for round-trip times from 10 to 200 ms, on the
// virtual clock. Each figure is the same on every run and machine.
//
//	go run ./examples/httpget
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/emutest"
	"github.com/netemu/netemu/link"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "httpget:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	const size = 100_000
	fmt.Fprintf(w, "GET of %d bytes at 10 Mbit/s, fresh connection\n", size)
	fmt.Fprintf(w, "%8s %10s %12s\n", "RTT", "elapsed", "round trips")
	for _, rtt := range []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond} {
		elapsed, err := get(rtt, 10e6, size)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%8v %10v %12.1f\n", rtt, elapsed, float64(elapsed)/float64(rtt))
	}
	return nil
}

// get returns how long a GET of size bytes takes, from the request to the
// last byte of the body, on a link with the given RTT and rate.
func get(rtt time.Duration, rate float64, size int) (time.Duration, error) {
	n, err := emu.New(emu.Config{Link: link.Config{Delay: rtt / 2, Rate: rate}, Seed: 1})
	if err != nil {
		return 0, err
	}
	defer n.Close()
	var elapsed time.Duration
	err = n.Run(context.Background(), func(ctx context.Context) error {
		body := make([]byte, size)
		srv := &emutest.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body)
		})}
		if err := srv.Start(n); err != nil {
			return err
		}
		defer srv.Close()
		tr := emutest.NewTransport(n)
		defer tr.CloseIdleConnections()

		start := n.Now()
		resp, err := (&http.Client{Transport: tr}).Get("http://server/")
		if err != nil {
			return err
		}
		got, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if got != int64(size) {
			return fmt.Errorf("got %d bytes, want %d", got, size)
		}
		elapsed = n.Now().Sub(start)
		return nil
	})
	return elapsed, err
}
