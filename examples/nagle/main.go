// Command nagle reproduces the 40 ms Nagle stall: a client that writes
// each request in two small pieces, with Nagle's algorithm on, waits for
// the receiver's delayed ACK before sending the second piece. Coalescing
// the writes, or SetNoDelay(true), removes the stall.
//
//	go run ./examples/nagle
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/emutest"
	"github.com/netemu/netemu/link"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "nagle:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	fmt.Fprintln(w, "10 write-write-read rounds; the receiver delays ACKs as Linux does (40 ms, on HZ 250's 4 ms ticks)")
	fmt.Fprintf(w, "%6s %-20s %10s %8s\n", "RTT", "client", "median", "stalled")
	for _, rtt := range []time.Duration{0, 20 * time.Millisecond} {
		for _, mode := range []string{"nagle, split", "nagle, coalesced", "nodelay, split"} {
			rounds, err := measure(rtt, mode)
			if err != nil {
				return err
			}
			stalled := 0
			for _, d := range rounds {
				if d > rtt+20*time.Millisecond {
					stalled++
				}
			}
			fmt.Fprintf(w, "%6v %-20s %10v %5d/%d\n", rtt, mode, rounds[len(rounds)/2], stalled, len(rounds))
		}
	}
	return nil
}

func measure(rtt time.Duration, mode string) ([]time.Duration, error) {
	n, err := emu.New(emu.Config{Link: link.Config{Delay: rtt / 2}})
	if err != nil {
		return nil, err
	}
	defer n.Close()
	var rounds []time.Duration
	err = n.Run(context.Background(), func(ctx context.Context) error {
		client, server, err := emutest.Pipe(ctx, n, 7)
		if err != nil {
			return err
		}
		defer client.Close()
		served := make(chan struct{})
		go func() { // answers each 8-byte request with 8 bytes
			defer close(served)
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
		defer func() { client.Close(); <-served }()
		client.SetNoDelay(mode == "nodelay, split")
		bw := bufio.NewWriter(client)
		reply := make([]byte, 8)
		for range 10 {
			start := n.Now()
			if mode == "nagle, coalesced" {
				bw.WriteString("ping")
				bw.WriteString("pong")
				err = bw.Flush()
			} else if _, err = client.Write([]byte("ping")); err == nil {
				_, err = client.Write([]byte("pong"))
			}
			if err == nil {
				_, err = io.ReadFull(client, reply)
			}
			if err != nil {
				return err
			}
			rounds = append(rounds, n.Now().Sub(start))
		}
		return nil
	})
	return rounds, err
}
