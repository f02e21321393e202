package workloads

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
)

// WritePattern is how the nagle workload writes each round's 8 bytes.
type WritePattern string

// Write patterns of the nagle workload.
const (
	Split     WritePattern = "split"     // two 4-byte writes: the pattern that stalls
	Coalesced WritePattern = "coalesced" // one 8-byte write through a bufio.Writer
)

// DefaultNagleRounds is Nagle's default number of rounds.
const DefaultNagleRounds = 50

const naglePort = 7

var nagleKind = Kind{
	Name:     "nagle",
	About:    "write-write-read rounds: the 40 ms Nagle/delayed-ACK stall",
	Headline: "median round",
	Flags: func(fs *flag.FlagSet) func() ([]Workload, error) {
		rounds := positive(fs, "rounds", DefaultNagleRounds, "write-write-read rounds")
		nodelays := boolVariants(fs, "nodelay", "both", "Nagle's algorithm off (true), on (false) or both")
		writes := variants(fs, "write", string(Split), "split, coalesced or both", Split, Coalesced)
		return func() ([]Workload, error) {
			n, err := rounds()
			if err != nil {
				return nil, err
			}
			nds, err := nodelays()
			if err != nil {
				return nil, err
			}
			ws, err := writes()
			if err != nil {
				return nil, err
			}
			var out []Workload
			for _, nd := range nds {
				for _, w := range ws {
					out = append(out, Nagle{Rounds: n, NoDelay: nd, Write: w})
				}
			}
			return out, nil
		}
	},
	References: []Reference{
		{"nagle, RTT 0 (loopback), median round", "nagle on", Nagle{}, 0, 0, 40918 * time.Microsecond},
		{"nagle, RTT 0 (loopback), median round", "nagle off", Nagle{NoDelay: true}, 0, 0, 5 * time.Microsecond},
	},
}

// Nagle runs Rounds rounds of write-write-read: the client writes 4 bytes,
// then 4 more, then reads the 8-byte reply the server sends once it has
// all 8. With Nagle's algorithm on, the second write waits for the ACK of
// the first, and a Linux receiver delays that ACK.
type Nagle struct {
	Rounds  int          // 0 means DefaultNagleRounds
	NoDelay bool         // false: Nagle on (SetNoDelay(false)); true: off
	Write   WritePattern // Split or Coalesced; "" means Split
}

// NagleDetail is Nagle's own figures.
type NagleDetail struct {
	NoDelay       bool
	Write         WritePattern
	Rounds        []time.Duration
	Round         Spread
	ModelRound    time.Duration // the model of one round
	StalledRounds int           // rounds that waited for a delayed ACK
}

// Summary implements Detail.
func (d NagleDetail) Summary() string {
	return fmt.Sprintf("round median %s, max %s (model %s), %d/%d stalled", link.FormatDuration(d.Round.Median),
		link.FormatDuration(d.Round.Max), link.FormatDuration(d.ModelRound), d.StalledRounds, len(d.Rounds))
}

// Headline implements Headliner: the median round.
func (d NagleDetail) Headline() (got, model time.Duration) { return d.Round.Median, d.ModelRound }

// MarshalJSON writes the record's nagle fields.
func (d NagleDetail) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		NoDelay       bool         `json:"nodelay"`
		Write         WritePattern `json:"write"`
		RoundMedian   float64      `json:"round_ms_median"`
		RoundMean     float64      `json:"round_ms_mean"`
		RoundMax      float64      `json:"round_ms_max"`
		ModelRound    float64      `json:"model_round_ms"`
		StalledRounds int          `json:"stalled_rounds"`
	}{d.NoDelay, d.Write, ms(d.Round.Median), ms(d.Round.Mean), ms(d.Round.Max), ms(d.ModelRound), d.StalledRounds})
}

// Name implements Workload.
func (Nagle) Name() string { return "nagle" }

// Variant implements Workload: Nagle's algorithm on or off, and the write
// pattern.
func (n Nagle) Variant() string {
	v := "nagle on"
	if n.NoDelay {
		v = "nagle off"
	}
	return v + ", " + string(n.WithDefaults().(Nagle).Write)
}

// WithDefaults implements Workload.
func (n Nagle) WithDefaults() Workload {
	if n.Rounds == 0 {
		n.Rounds = DefaultNagleRounds
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
	return !n.NoDelay && n.WithDefaults().(Nagle).Write == Split && path.DelayedACK > 0
}

// perRound is the model of one round: one round trip, or with a stall two
// and the delayed-ACK timer.
func (n Nagle) perRound(path Path) time.Duration {
	if n.stalls(path) {
		return 2*path.RTT + path.DelayedACK
	}
	return path.RTT
}

// Model: a handshake, then one round trip per round; with Nagle on and
// split writes, the second write waits for the first's delayed ACK, so
// every round after the first costs two round trips plus the delayed-ACK
// timer.
func (n Nagle) Model(path Path) Model {
	n = n.WithDefaults().(Nagle)
	if n.stalls(path) {
		// The first round does not stall: the receiver starts in
		// quick-ACK mode and leaves it once it has answered.
		return model(path, float64(2*n.Rounds), 0, time.Duration(n.Rounds-1)*path.DelayedACK)
	}
	return model(path, float64(n.Rounds+1), 0, 0)
}

// Run implements Workload.
func (n Nagle) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	stop, err := serveOne(env, naglePort, serveNagle)
	if err != nil {
		return Result{}, err
	}
	defer stop()

	start := env.Now()
	c, err := env.Dial(ctx, naglePort)
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	if err := c.SetNoDelay(n.NoDelay); err != nil {
		return Result{}, err
	}
	bw := bufio.NewWriter(c)
	reply := make([]byte, 8)
	d := NagleDetail{NoDelay: n.NoDelay, Write: n.Write, ModelRound: n.perRound(path)}
	var bytes int64
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
			return Result{}, fmt.Errorf("round %d: %w", len(d.Rounds), err)
		}
		d.Rounds = append(d.Rounds, env.Now().Sub(t0))
		bytes += int64(len(reply))
	}
	elapsed := env.Now().Sub(start)
	d.Round = spread(d.Rounds)
	// A round stalled if it took half a delayed-ACK timer (40 ms when the
	// link has none) longer than a round trip.
	wait := path.DelayedACK
	if wait == 0 {
		wait = link.LinuxDelayedACK
	}
	for _, r := range d.Rounds {
		if r > path.RTT+wait/2 {
			d.StalledRounds++
		}
	}
	return Result{Started: start, Elapsed: elapsed, Bytes: bytes, Conns: 1, Requests: n.Rounds, Detail: d}, nil
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
