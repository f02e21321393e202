package workloads

import (
	"context"
	"errors"
	"flag"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// gvisorTCP is the TCP of these tests' networks: gVisor's, behind the
// link's delayed-ACK stage, which the models take as the receiver's
// (Path.DelayedACK). netemu's TCP delays its own ACKs on Linux's timer
// wheel, a few milliseconds past the models' 40 ms.
var gvisorTCP = tcpstack.TCPConfig{Impl: tcpstack.GVisor}

// run runs w on a fresh emulated network with the given path and the
// reference defaults (1000-packet queue, Linux's delayed ACK).
func run(t testing.TB, w Workload, p Path) (Result, emu.Stats) {
	t.Helper()
	return runSeed(t, w, p, 1)
}

// runSeed is run with the given seed.
func runSeed(t testing.TB, w Workload, p Path, seed uint64) (Result, emu.Stats) {
	t.Helper()
	n, err := emu.New(emu.Config{Link: link.Config{Delay: p.RTT / 2, Rate: p.Rate, DelayedACK: p.DelayedACK}, TCP: gvisorTCP, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var r Result
	err = n.Run(context.Background(), func(ctx context.Context) error {
		var err error
		r, err = Run(ctx, w, n, p)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", w.Name(), err)
	}
	return r, n.Stats()
}

func path(rtt time.Duration, rate float64) Path {
	return Path{RTT: rtt, Rate: rate, DelayedACK: link.LinuxDelayedACK}
}

func within(t *testing.T, what string, got, want time.Duration, tol float64) {
	t.Helper()
	if d := float64(got-want) / float64(want); d < -tol || d > tol {
		t.Errorf("%s: %v, want %v ±%.0f%% (off by %+.1f%%)", what, got, want, tol*100, d*100)
	}
}

func refs(table string) []Reference {
	var out []Reference
	for _, r := range References() {
		if strings.HasPrefix(r.Table, table) {
			out = append(out, r)
		}
	}
	return out
}

func runRef(t *testing.T, r Reference) Result {
	t.Helper()
	res, _ := run(t, r.Workload, path(r.RTT, r.Rate))
	return res
}

// At unlimited rate the virtual clock counts round trips only: exactly
// two per fresh request, one per reused request plus the handshake.
func TestKeepAliveRoundTrips(t *testing.T) {
	const rtt = 55 * time.Millisecond
	fresh, _ := run(t, KeepAlive{Mode: Fresh}, path(rtt, 0))
	reuse, _ := run(t, KeepAlive{Mode: Reuse}, path(rtt, 0))
	if fresh.Elapsed != 40*rtt || reuse.Elapsed != 21*rtt {
		t.Errorf("fresh %v, reuse %v; want exactly 40 and 21 round trips (%v, %v)", fresh.Elapsed, reuse.Elapsed, 40*rtt, 21*rtt)
	}
	if fresh.Model.Elapsed != fresh.Elapsed || reuse.Model.Elapsed != reuse.Elapsed {
		t.Errorf("model: fresh %v, reuse %v; want the measured %v and %v", fresh.Model.Elapsed, reuse.Model.Elapsed, fresh.Elapsed, reuse.Elapsed)
	}
	if fresh.Conns != 20 || reuse.Conns != 1 {
		t.Errorf("connections: fresh %d, reuse %d; want 20 and 1", fresh.Conns, reuse.Conns)
	}
	if d := fresh.Detail.(KeepAliveDetail); d.PerRequest != fresh.Elapsed/20 || d.Mode != Fresh {
		t.Errorf("detail %+v, elapsed %v", d, fresh.Elapsed)
	}
}

func nagle(r Result) NagleDetail { return r.Detail.(NagleDetail) }

// On the virtual clock a stalled round is exactly two round trips and the
// delayed-ACK timer; without Nagle or with one write, exactly one RTT.
func TestNagleStall(t *testing.T) {
	const delack = 40 * time.Millisecond
	on := nagle(run1(t, Nagle{}, path(0, 0)))
	if on.Round.Median != delack || on.Round.Max != delack {
		t.Errorf("Nagle on, RTT 0: median round %v, max %v; want exactly %v", on.Round.Median, on.Round.Max, delack)
	}
	if on.StalledRounds != 49 {
		t.Errorf("Nagle on: %d of 50 rounds stalled; want all but the first (49)", on.StalledRounds)
	}
	for _, rtt := range []time.Duration{0, 20 * time.Millisecond} {
		off := nagle(run1(t, Nagle{NoDelay: true}, path(rtt, 0)))
		coalesced := nagle(run1(t, Nagle{Write: Coalesced}, path(rtt, 0)))
		for name, d := range map[string]NagleDetail{"Nagle off": off, "coalesced with Nagle on": coalesced} {
			if d.Round.Median != rtt || d.Round.Max != rtt || d.StalledRounds != 0 || d.ModelRound != rtt {
				t.Errorf("%s, RTT %v: median %v, max %v (model %v), %d stalled; want exactly one RTT and none", name, rtt, d.Round.Median, d.Round.Max, d.ModelRound, d.StalledRounds)
			}
		}
	}
	const rtt = 20 * time.Millisecond
	r := run1(t, Nagle{}, path(rtt, 0))
	far := nagle(r)
	if far.Round.Median != 2*rtt+delack || far.ModelRound != 2*rtt+delack {
		t.Errorf("Nagle on, RTT 20ms: median round %v (model %v); want exactly 2 RTT + delayed ACK = %v", far.Round.Median, far.ModelRound, 2*rtt+delack)
	}
	if r.Model.Elapsed != 100*rtt+49*delack {
		t.Errorf("model: %v in all; want 100 RTT + 49 × 40ms (the first round does not stall)", r.Model.Elapsed)
	}
	if got, model := r.Headline(); got != far.Round.Median || model != far.ModelRound {
		t.Errorf("headline %v (model %v); want the median round", got, model)
	}
}

func run1(t *testing.T, w Workload, p Path) Result {
	t.Helper()
	r, _ := run(t, w, p)
	return r
}

// Bulk's cells are held to ±5 % of the reference by cmd/netemu's
// TestReproduceJSON, on the records its TestReproduceGolden pins: running
// their 30 MiB again here took 17 s of CPU under the race detector.

// Page: every cell within ±25% of the reference, and the shape of each
// table the same: where the reference moves by more than 10% between
// neighbouring cells, netemu moves the same way; where it stays within
// 10% (bandwidth past the threshold), netemu does too.
func TestPageMatchesReference(t *testing.T) {
	for _, table := range []string{"page, RTT", "page, rate"} {
		var prev, prevRef time.Duration
		for _, r := range refs(table) {
			res := runRef(t, r)
			within(t, r.Table+" "+r.Label, res.Elapsed, r.Time, 0.25)
			if res.Conns != 6 || res.Requests != 40 || res.Bytes != 120_000 {
				t.Errorf("%s %s: %d conns, %d requests, %d bytes", r.Table, r.Label, res.Conns, res.Requests, res.Bytes)
			}
			if prev != 0 {
				refMove := float64(r.Time-prevRef) / float64(prevRef)
				move := float64(res.Elapsed-prev) / float64(prev)
				flat := refMove > -0.10 && refMove < 0.10
				if flat && (move <= -0.10 || move >= 0.10) || !flat && (move > 0) != (refMove > 0) {
					t.Errorf("%s → %s: reference moves %+.0f%%, netemu %+.0f%%", r.Table, r.Label, refMove*100, move*100)
				}
			}
			prev, prevRef = res.Elapsed, r.Time
		}
	}
}

// Page runs six clients in parallel; its trace must still be the same on
// every run.
func TestPageDeterministic(t *testing.T) {
	for _, procs := range []int{1, 2} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			_, first := run(t, Page{}, path(50*time.Millisecond, 10e6))
			for i := range 5 {
				_, st := run(t, Page{}, path(50*time.Millisecond, 10e6))
				if st.TraceHash != first.TraceHash {
					t.Fatalf("GOMAXPROCS=%d run %d: trace %s, first %s", procs, i+1, st.TraceHash[:12], first.TraceHash[:12])
				}
			}
		}()
	}
}

func TestValidation(t *testing.T) {
	for _, c := range []struct {
		w    Workload
		want string
	}{
		{Page{Resources: -1}, "resources is -1"},
		{Page{Conns: -2}, "conns is -2"},
		{Bulk{Size: -1}, "size is -1"},
		{KeepAlive{Mode: "sometimes"}, `mode "sometimes"`},
		{KeepAlive{Requests: -3}, "requests is -3"},
		{Nagle{Write: "twice"}, `write "twice"`},
		{Nagle{Rounds: -1}, "rounds is -1"},
	} {
		_, err := Run(context.Background(), c.w, nil, Path{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want an error containing %q", c.w, err, c.want)
		}
	}
}

// failingEnv is a network whose every Listen and Dial fails.
type failingEnv struct{ emu.Env }

var errNoNetwork = errors.New("no network")

func (failingEnv) Listen(uint16) (net.Listener, error) { return nil, errNoNetwork }
func (failingEnv) Dial(context.Context, uint16) (emu.Conn, error) {
	return nil, errNoNetwork
}

// An error names its workload once, and keeps its cause.
func TestErrorsNameTheWorkloadOnce(t *testing.T) {
	for _, k := range Kinds() {
		ws, err := k.Flags(flag.NewFlagSet(k.Name, flag.ContinueOnError))()
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), ws[0], failingEnv{}, Path{})
		if err == nil || !errors.Is(err, errNoNetwork) || strings.Count(err.Error(), k.Name) != 1 || !strings.HasPrefix(err.Error(), k.Name+": ") {
			t.Errorf("%s on a failing network: %v; want one error that starts with %q, names it once and wraps the cause", k.Name, err, k.Name+": ")
		}
	}
}
