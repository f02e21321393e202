package emu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/race"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"go.uber.org/goleak"
)

// transferResult is what one lossy transfer saw at both ends.
type transferResult struct {
	sent, got   [sha256.Size]byte
	sentN, gotN int64
	elapsed     time.Duration // dial to last byte, on the run's clock
	stats       Stats
	// discarded counts the packets the two hosts threw away as damaged:
	// failed TCP checksums and malformed IP packets (header checksum).
	discarded uint64
	// retransmits and timeouts are the server's: segments sent again, and
	// retransmission timeouts.
	retransmits, timeouts uint64
}

// seededWriter writes size bytes of a ChaCha8 stream to w, hashing them.
func seededWriter(w io.Writer, size int64, seed uint64, h hash.Hash) (int64, error) {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	src := rand.NewChaCha8(key)
	buf := make([]byte, 64<<10)
	var n int64
	for n < size {
		b := buf[:min(int64(len(buf)), size-n)]
		src.Read(b)
		h.Write(b)
		m, err := w.Write(b)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// lossyTransfer downloads size pseudo-random bytes from the server over one
// connection and returns the hashes of what the server wrote and what the
// client read.
func lossyTransfer(t *testing.T, cfg Config, size int64) transferResult {
	t.Helper()
	n := newNet(t, cfg)
	var res transferResult
	err := n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Listen(80)
		if err != nil {
			return err
		}
		defer ln.Close()
		served := make(chan error, 1)
		n.Go(func() {
			c, err := ln.Accept()
			if err != nil {
				served <- err
				return
			}
			defer c.Close()
			h := sha256.New()
			res.sentN, err = seededWriter(c, size, cfg.Seed, h)
			h.Sum(res.sent[:0])
			served <- err
		})
		start := n.Now()
		c, err := n.Dial(ctx, 80)
		if err != nil {
			return err
		}
		defer c.Close()
		h := sha256.New()
		res.gotN, err = io.Copy(h, c)
		h.Sum(res.got[:0])
		res.elapsed = n.Now().Sub(start)
		if err != nil {
			return fmt.Errorf("client read %d bytes, then: %w", res.gotN, err)
		}
		if err := <-served; err != nil {
			return fmt.Errorf("server wrote %d bytes, then: %w", res.sentN, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	res.stats = n.Stats()
	for _, h := range []*tcpstack.Host{n.Client(), n.Server()} {
		st := h.Stack().Stats()
		res.discarded += st.TCP.ChecksumErrors.Value() + st.IP.MalformedPacketsReceived.Value()
	}
	srv := n.Server().Stack().Stats().TCP
	res.retransmits, res.timeouts = srv.Retransmits.Value(), srv.Timeouts.Value()
	n.Close()
	return res
}

// TestLossyTransferIsExact proves that TCP over a link that loses,
// reorders, duplicates and corrupts packets delivers every byte intact, on
// both clocks: the SHA-256 of what the client read equals that of what the
// server wrote, while the link's counters show that each impairment
// happened in both directions and the hosts' counters show that corrupted
// packets were discarded by their checksum checks (so the stream was
// completed by retransmissions, not by accepting damaged data).
func TestLossyTransferIsExact(t *testing.T) {
	defer goleak.VerifyNone(t)
	impaired := func(delay time.Duration) link.Config {
		return link.Config{
			Delay:     delay,
			Rate:      100e6,
			Loss:      link.RandomLoss(0.03, 0),
			Reorder:   link.Chance{P: 0.10},
			Duplicate: link.Chance{P: 0.01},
			Corrupt:   link.Chance{P: 0.01},
		}
	}
	const full = 50 << 20
	// The race detector slows every packet's path severalfold: under it
	// both cases move less data.
	t.Run("virtual", func(t *testing.T) {
		size := int64(full)
		if race.Enabled {
			// Seed 5 makes the same impairments every run: 4 MiB has
			// dozens of each in both directions.
			size = 4 << 20
			t.Logf("race detector on: %d MiB instead of %d MiB", size>>20, full>>20)
		}
		checkLossyTransfer(t, Config{Link: impaired(10 * time.Millisecond), Seed: 5}, size)
	})
	t.Run("real", func(t *testing.T) {
		// Recovery from the losses, retransmission timeouts of 200 ms
		// and more among them, sets the pace rather than the delay or the
		// rate: 50 MiB takes about 50 s of wall time even at 2 ms RTT.
		if testing.Short() {
			t.Skip("50 MiB through 3 % loss takes about 50 s of wall time on the real clock; skipped under -short")
		}
		size := int64(full)
		if race.Enabled {
			size = 3 << 20
			t.Logf("race detector on: %d MiB instead of %d MiB", size>>20, full>>20)
		}
		checkLossyTransfer(t, Config{Link: impaired(time.Millisecond), Clock: Real, Seed: 5}, size)
	})
}

// checkLossyTransfer runs lossyTransfer and checks that the bytes arrived
// intact and that every impairment of cfg happened in both directions.
func checkLossyTransfer(t *testing.T, cfg Config, size int64) {
	t.Helper()
	start := time.Now()
	r := lossyTransfer(t, cfg, size)
	a, b := r.stats.Link[link.AtoB], r.stats.Link[link.BtoA]
	t.Logf("%d MiB in %v on the %v clock (%v of wall time); data b>a: %d packets, %d lost, %d duplicated, %d corrupted, %d reordered; ACKs a>b: %d packets, %d lost, %d duplicated, %d corrupted, %d reordered; %d damaged packets discarded by the hosts; the server retransmitted %d segments and timed out %d times",
		size>>20, r.elapsed, cfg.Clock, time.Since(start).Round(time.Millisecond),
		b.SentPackets, b.Drops[link.DropLoss], b.Duplicated, b.Corrupted, b.Reordered,
		a.SentPackets, a.Drops[link.DropLoss], a.Duplicated, a.Corrupted, a.Reordered, r.discarded, r.retransmits, r.timeouts)
	if r.sentN != size || r.gotN != size || r.got != r.sent {
		t.Fatalf("client read %d bytes with sha256 %x; want the %d bytes the server wrote (it wrote %d), sha256 %x", r.gotN, r.got, size, r.sentN, r.sent)
	}
	for _, d := range []link.Dir{link.AtoB, link.BtoA} {
		s := r.stats.Link[d]
		for _, imp := range []struct {
			name string
			n    uint64
		}{{"lost", s.Drops[link.DropLoss]}, {"duplicated", s.Duplicated}, {"corrupted", s.Corrupted}, {"reordered", s.Reordered}} {
			if imp.n == 0 {
				t.Errorf("direction %v: got 0 of %d packets %s; want some", d, s.SentPackets, imp.name)
			}
		}
	}
	// Every corrupted packet that reached a host fails a checksum (a single
	// flipped bit always changes a ones'-complement sum), unless the flip
	// made it fail an earlier check (a wrong address or version).
	if corrupted := a.Corrupted + b.Corrupted; r.discarded == 0 || r.discarded > corrupted {
		t.Errorf("the hosts discarded %d damaged packets; want from 1 to the %d the link corrupted", r.discarded, corrupted)
	}
}

// pageRun fetches one response of respSize pseudo-random bytes on each of
// conns connections opened at once, each started through n.Go as a page's
// parallel fetches are, checks every response byte for byte, and returns
// the time from the first dial to the last byte with the run's counters.
func pageRun(t *testing.T, cfg Config, conns int, respSize int64) (time.Duration, Stats) {
	t.Helper()
	n := newNet(t, cfg)
	var elapsed time.Duration
	err := n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Listen(80)
		if err != nil {
			return err
		}
		defer ln.Close()
		// The server answers each request, an 8-byte connection number,
		// with that connection's stream.
		n.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				n.Go(func() {
					defer c.Close()
					var req [8]byte
					if _, err := io.ReadFull(c, req[:]); err != nil {
						return
					}
					seededWriter(c, respSize, binary.BigEndian.Uint64(req[:]), sha256.New())
				})
			}
		})
		start := n.Now()
		errs := make(chan error, conns)
		for i := range conns {
			n.Go(func() {
				errs <- func() error {
					c, err := n.Dial(ctx, 80)
					if err != nil {
						return err
					}
					defer c.Close()
					var req [8]byte
					binary.BigEndian.PutUint64(req[:], uint64(i)+1)
					if _, err := c.Write(req[:]); err != nil {
						return err
					}
					got, want := sha256.New(), sha256.New()
					gotN, err := io.Copy(got, c)
					if err != nil {
						return fmt.Errorf("connection %d: read %d bytes, then: %w", i, gotN, err)
					}
					seededWriter(io.Discard, respSize, uint64(i)+1, want)
					if gotN != respSize || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
						return fmt.Errorf("connection %d: got %d bytes, sha256 %x; want %d bytes, sha256 %x", i, gotN, got.Sum(nil), respSize, want.Sum(nil))
					}
					return nil
				}()
			})
		}
		for range conns {
			if err := <-errs; err != nil {
				return err
			}
		}
		elapsed = n.Now().Sub(start)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := n.Stats()
	n.Close()
	return elapsed, st
}

// TestImpairedDeterminism proves that every impairment draws only from the
// run's seed: with loss (correlated one way, Gilbert-Elliott the other),
// normally distributed jitter, reordering, duplication and corruption all
// on, repeated runs of a parallel workload give the same trace hash, the
// same elapsed time and the same link counters at GOMAXPROCS 1, 2 and 4,
// while another seed, for the whole run or for the link alone, gives
// another trace.
func TestImpairedDeterminism(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := func(loss link.Loss) link.Config {
		return link.Config{
			Delay:        10 * time.Millisecond,
			Rate:         20e6,
			Loss:         loss,
			Duplicate:    link.Chance{P: 0.03},
			Corrupt:      link.Chance{P: 0.03},
			Reorder:      link.Chance{P: 0.10},
			ReorderGap:   2,
			Jitter:       3 * time.Millisecond,
			JitterCorr:   0.25,
			Distribution: link.Normal,
		}
	}
	// netem's correlation narrows the spread of its draws: 8 % with
	// correlation 10 % loses about 3 % of the packets.
	lc := dir(link.RandomLoss(0.08, 0.10))
	lc.DelayedACK = link.LinuxDelayedACK
	down := dir(link.GELoss(0.02, 0.4, 0.5, 0.005))
	lc.BtoA = &down
	cfg := Config{Link: lc, Seed: 42}
	const conns, respSize = 6, 48 << 10
	runs := 10
	if testing.Short() {
		runs = 5
	}
	runs = race.DeterministicRuns(runs)

	want, wantSt := pageRun(t, cfg, conns, respSize)
	for _, d := range []link.Dir{link.AtoB, link.BtoA} {
		s := wantSt.Link[d]
		t.Logf("%v: %d packets sent, %d lost, %d duplicated, %d corrupted, %d reordered", d, s.SentPackets, s.Drops[link.DropLoss], s.Duplicated, s.Corrupted, s.Reordered)
		for _, imp := range []struct {
			name string
			n    uint64
		}{{"lost", s.Drops[link.DropLoss]}, {"duplicated", s.Duplicated}, {"corrupted", s.Corrupted}, {"reordered", s.Reordered}} {
			if imp.n == 0 {
				t.Errorf("direction %v: got 0 of %d packets %s; want some, or the test does not cover that impairment", d, s.SentPackets, imp.name)
			}
		}
	}
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for i := range runs {
				got, st := pageRun(t, cfg, conns, respSize)
				if got != want || st.TraceHash != wantSt.TraceHash {
					t.Fatalf("run %d: got %v, trace %.16s; want %v, trace %.16s", i, got, st.TraceHash, want, wantSt.TraceHash)
				}
				if st.Link != wantSt.Link {
					t.Fatalf("run %d: got link counters %+v; want %+v", i, st.Link, wantSt.Link)
				}
			}
			t.Logf("%d runs: %v each, trace %.16s", runs, want, wantSt.TraceHash)
		})
	}

	seed := cfg
	seed.Seed = 43
	linkSeed := cfg
	linkSeed.Link.Seed = 43 // the hosts keep seed 42
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"seed 43 instead of 42", seed}, {"link seed 43, hosts' seed 42", linkSeed}} {
		t.Run(c.name, func(t *testing.T) {
			got, st := pageRun(t, c.cfg, conns, respSize)
			t.Logf("%v, trace %.16s (seed 42: %v, trace %.16s)", got, st.TraceHash, want, wantSt.TraceHash)
			if st.TraceHash == wantSt.TraceHash {
				t.Errorf("trace hash %s equals seed 42's; want a different hash", st.TraceHash)
			}
		})
	}
}
