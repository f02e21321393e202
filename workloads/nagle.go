package workloads

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/netemu/netemu/emu"
)

// Write patterns of the nagle workload.
const (
	Split     = "split"     // two 4-byte writes: the pattern that stalls
	Coalesced = "coalesced" // one 8-byte write through a bufio.Writer
)

const naglePort = 7

// Nagle runs Rounds rounds of write-write-read: the client writes 4 bytes,
// then 4 more, then reads the 8-byte reply the server sends once it has
// all 8. With Nagle's algorithm on, the second write waits for the ACK of
// the first, and a Linux receiver delays that ACK.
type Nagle struct {
	Rounds  int    // default 50
	NoDelay bool   // false: Nagle on (SetNoDelay(false)); true: off
	Write   string // Split (default) or Coalesced
}

// Name implements Workload.
func (Nagle) Name() string { return "nagle" }

func (n Nagle) withDefaults() Nagle {
	if n.Rounds == 0 {
		n.Rounds = 50
	}
	if n.Write == "" {
		n.Write = Split
	}
	return n
}

// Validate implements Workload.
func (n Nagle) Validate() error {
	switch {
	case n.Rounds < 0:
		return fmt.Errorf("nagle: rounds is %d; want 1 or more", n.Rounds)
	case n.Write != "" && n.Write != Split && n.Write != Coalesced:
		return fmt.Errorf("nagle: write %q is unknown; want %q or %q", n.Write, Split, Coalesced)
	}
	return nil
}

// stalls reports whether the model expects each round to wait for a
// delayed ACK.
func (n Nagle) stalls(path Path) bool {
	return !n.NoDelay && n.withDefaults().Write == Split && path.DelayedACK > 0
}

// Model: a handshake, then one round trip per round; with Nagle on and
// split writes, the second write waits for the first's delayed ACK, so
// every round after the first costs two round trips plus the delayed-ACK
// timer.
func (n Nagle) Model(path Path) Model {
	n = n.withDefaults()
	rounds := time.Duration(n.Rounds)
	if n.stalls(path) {
		// The first round does not stall: the receiver starts in
		// quick-ACK mode and leaves it once it has answered.
		m := model(path, float64(2*n.Rounds), 0, (rounds-1)*path.DelayedACK)
		m.PerRound = 2*path.RTT + path.DelayedACK
		return m
	}
	m := model(path, float64(n.Rounds+1), 0, 0)
	m.PerRound = path.RTT
	return m
}

// Run implements Workload.
func (n Nagle) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	if err := n.Validate(); err != nil {
		return Result{}, err
	}
	n = n.withDefaults()
	ln, err := env.Listen(naglePort)
	if err != nil {
		return Result{}, err
	}
	served := make(chan error, 1)
	env.Go(func() {
		served <- serveNagle(ln)
	})
	defer func() {
		ln.Close()
		<-served
	}()

	start := env.Now()
	c, err := env.Dial(ctx, naglePort)
	if err != nil {
		return Result{}, fmt.Errorf("nagle: %w", err)
	}
	defer c.Close()
	if err := c.SetNoDelay(n.NoDelay); err != nil {
		return Result{}, err
	}
	bw := bufio.NewWriter(c)
	reply := make([]byte, 8)
	r := Result{Workload: "nagle", Started: start, Conns: 1, Requests: n.Rounds, NoDelay: n.NoDelay, Write: n.Write, Model: n.Model(path)}
	for range n.Rounds {
		t0 := env.Now()
		if n.Write == Split {
			_, err = c.Write([]byte("ping"))
			if err == nil {
				_, err = c.Write([]byte("pong"))
			}
		} else {
			bw.WriteString("ping")
			bw.WriteString("pong")
			err = bw.Flush()
		}
		if err == nil {
			_, err = io.ReadFull(c, reply)
		}
		if err != nil {
			return Result{}, fmt.Errorf("nagle: round %d: %w", len(r.Rounds), err)
		}
		d := env.Now().Sub(t0)
		r.Rounds = append(r.Rounds, d)
		r.Bytes += int64(len(reply))
	}
	r.Elapsed = env.Now().Sub(start)
	summarize(&r)
	// A round stalled if it took half a delayed-ACK timer (40 ms when the
	// link has none) longer than a round trip.
	wait := path.DelayedACK
	if wait == 0 {
		wait = 40 * time.Millisecond
	}
	for _, d := range r.Rounds {
		if d > path.RTT+wait/2 {
			r.StalledRounds++
		}
	}
	return r, nil
}

// serveNagle answers each 8 bytes read on one connection with 8 bytes.
func serveNagle(ln net.Listener) error {
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 8)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if _, err := c.Write(buf); err != nil {
			return err
		}
	}
}
