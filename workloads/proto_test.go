package workloads

import (
	"flag"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/internal/race"

	"github.com/netemu/netemu/workloads/web"
)

// Over TLS the trace is the same on every run: TLS draws from the run's
// seed and reads the run's clock.
func TestSecurePageDeterministic(t *testing.T) {
	for _, c := range []struct {
		w     Page
		procs []int
	}{
		{Page{Proto: web.H1S, TLS: web.TLS12}, []int{1, 2}},
		{Page{Proto: web.H1S, TLS: web.TLS13}, []int{1, 2}},
	} {
		for _, procs := range c.procs {
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				first, st := run(t, c.w, path(50*time.Millisecond, 10e6))
				for i := range race.DeterministicRuns(9) - 1 {
					r, st2 := run(t, c.w, path(50*time.Millisecond, 10e6))
					if st2.TraceHash != st.TraceHash || r.Elapsed != first.Elapsed {
						t.Fatalf("%s, GOMAXPROCS=%d, run %d: trace %s in %v; first %s in %v", c.w.Variant(), procs, i+1, st2.TraceHash[:12], r.Elapsed, st.TraceHash[:12], first.Elapsed)
					}
				}
			}()
		}
	}
}

// h2's trace is the same on every run, whatever the number of
// processors: net/http's HTTP/2 client and server run many goroutines at
// one instant, and h2.go keeps them from racing for the connection
// (batched writes, requests and responses in turns that end when a
// stream's last frame is written, no WINDOW_UPDATE raced by the
// acknowledgement of the client's SETTINGS).
func TestH2Deterministic(t *testing.T) {
	runs := 20
	if testing.Short() {
		runs = 5
	}
	runs = race.DeterministicRuns(runs)
	p := path(50*time.Millisecond, 10e6)
	for _, w := range []Workload{
		Page{Proto: web.H2, TLS: web.TLS13},
		Page{Proto: web.H2, TLS: web.TLS12, Timings: true},
		KeepAlive{Mode: Reuse, Proto: web.H2, TLS: web.TLS13},
		KeepAlive{Mode: Fresh, Proto: web.H2, TLS: web.TLS12, Resume: true},
		Page{Proto: web.H2C, Timings: true},
		KeepAlive{Mode: Fresh, Proto: web.H2C},
	} {
		var (
			first   Result
			firstSt emu.Stats
		)
		for _, procs := range []int{1, 2, 4} {
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				for i := range runs {
					r, st := run(t, w, p)
					if first.Elapsed == 0 {
						first, firstSt = r, st
						continue
					}
					if st.TraceHash != firstSt.TraceHash || r.Elapsed != first.Elapsed {
						t.Fatalf("%s %s, GOMAXPROCS=%d, run %d: trace %s in %v; first (GOMAXPROCS=1) %s in %v", w.Name(), w.Variant(), procs, i+1, st.TraceHash[:12], r.Elapsed, firstSt.TraceHash[:12], first.Elapsed)
					}
				}
			}()
		}
	}
}

// Two seeds give two certificates, two handshakes: different traces.
func TestSecureTraceFollowsSeed(t *testing.T) {
	_, a := run(t, Page{Proto: web.H1S}, path(50*time.Millisecond, 10e6))
	_, b := runSeed(t, Page{Proto: web.H1S}, path(50*time.Millisecond, 10e6), 2)
	if a.TraceHash == b.TraceHash {
		t.Errorf("seeds 1 and 2 give the same trace %s", a.TraceHash[:12])
	}
}

// At unlimited rate the virtual clock counts round trips only, and they
// are the model's: per connection TCP 1, TLS 1.3 1, TLS 1.2 2 (1 when
// resumed), and one per request.
func TestSecureKeepAliveRoundTrips(t *testing.T) {
	const rtt = 50 * time.Millisecond
	for _, c := range []struct {
		w    KeepAlive
		rtts int
	}{
		{KeepAlive{Mode: Fresh, Proto: web.H1S, TLS: web.TLS13}, 20 * 3},
		{KeepAlive{Mode: Fresh, Proto: web.H1S, TLS: web.TLS13, Resume: true}, 20 * 3},
		{KeepAlive{Mode: Fresh, Proto: web.H1S, TLS: web.TLS12}, 20 * 4},
		{KeepAlive{Mode: Fresh, Proto: web.H1S, TLS: web.TLS12, Resume: true}, 4 + 19*3},
		{KeepAlive{Mode: Reuse, Proto: web.H1S, TLS: web.TLS12}, 3 + 20},
		{KeepAlive{Mode: Fresh, Proto: web.H2, TLS: web.TLS12, Resume: true}, 4 + 19*3},
		{KeepAlive{Mode: Reuse, Proto: web.H2, TLS: web.TLS13}, 2 + 20},
	} {
		r := run1(t, c.w, path(rtt, 0))
		want := time.Duration(c.rtts) * rtt
		if r.Elapsed != want || r.Model.Elapsed != want {
			t.Errorf("%s: %v, model %v; want exactly %d round trips (%v)", c.w.Variant(), r.Elapsed, r.Model.Elapsed, c.rtts, want)
		}
		d := r.Detail.(KeepAliveDetail)
		wantResumed := 0
		if c.w.Resume {
			wantResumed = r.Conns - 1
		}
		if d.Resumed != wantResumed || d.Proto != c.w.Proto || d.TLS != c.w.TLS {
			t.Errorf("%s: %d of %d connections resumed, detail %+v; want %d", c.w.Variant(), d.Resumed, r.Conns, d, wantResumed)
		}
	}
}

// Page over TLS and HTTP/2 on the reference links. h2 is within ±25 % of
// its model. h1s's model is h1's plus the TLS round trips, so its error
// is h1's (whose waves and transfer overlap more than the model counts:
// up to −28 % on these links) give or take 5 points. h2 on one
// connection; every byte delivered.
func TestSecurePageModel(t *testing.T) {
	off := func(r Result) float64 { return float64(r.Elapsed-r.Model.Elapsed) / float64(r.Model.Elapsed) }
	for _, ref := range refs("page, ") {
		h1 := off(run1(t, Page{}, path(ref.RTT, ref.Rate)))
		for _, w := range []Page{{Proto: web.H1S, TLS: web.TLS12}, {Proto: web.H1S}, {Proto: web.H2, TLS: web.TLS12}, {Proto: web.H2}} {
			r := run1(t, w, path(ref.RTT, ref.Rate))
			if w.Proto == web.H2 {
				within(t, ref.Table+" "+ref.Label+" "+w.Variant()+" vs model", r.Elapsed, r.Model.Elapsed, 0.25)
			} else if d := off(r) - h1; d < -0.05 || d > 0.05 {
				t.Errorf("%s %s %s: %+.1f%% off the model, h1 %+.1f%%; want h1's error ±5 points", ref.Table, ref.Label, w.Variant(), off(r)*100, h1*100)
			}
			wantConns := DefaultPageConns
			if w.Proto == web.H2 {
				wantConns = 1
			}
			if r.Conns != wantConns || r.Requests != 40 || r.Bytes != 120_000 {
				t.Errorf("%s %s %s: %d conns, %d requests, %d bytes; want %d conns", ref.Table, ref.Label, w.Variant(), r.Conns, r.Requests, r.Bytes, wantConns)
			}
		}
	}
}

// TLS costs round trips: at 50 ms with h1s, TLS 1.2 is slower than 1.3 by
// about one RTT, and 1.3 slower than plain h1 by about one.
func TestTLSRoundTripsShowInPage(t *testing.T) {
	p := path(50*time.Millisecond, 10e6)
	h1 := run1(t, Page{}, p).Elapsed
	t13 := run1(t, Page{Proto: web.H1S, TLS: web.TLS13}, p).Elapsed
	t12 := run1(t, Page{Proto: web.H1S, TLS: web.TLS12}, p).Elapsed
	for _, c := range []struct {
		what       string
		slow, fast time.Duration
	}{{"TLS 1.3 over h1", t13, h1}, {"TLS 1.2 over 1.3", t12, t13}} {
		if d := c.slow - c.fast; d < 40*time.Millisecond || d > 70*time.Millisecond {
			t.Errorf("%s costs %v (%v vs %v); want about one RTT (50ms)", c.what, d, c.slow, c.fast)
		}
	}
}

func TestProtoFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string // variants
		err  string
	}{
		{nil, []string{""}, ""},
		{[]string{"--proto", "h1,h1s,h2"}, []string{"", "h1s, TLS 1.3", "h2, TLS 1.3"}, ""},
		{[]string{"--proto", "h2,h1", "--tls", "1.2,1.3"}, []string{"h2, TLS 1.2", "h2, TLS 1.3", ""}, ""},
		{[]string{"--proto", "h4"}, nil, `--proto "h4": want h1, h1s, h2, h2c or h3`},
		{[]string{"--proto", "h2,h3", "--tls", "1.2,1.3"}, []string{"h2, TLS 1.2", "h2, TLS 1.3", "h3, TLS 1.3"}, ""},
		{[]string{"--proto", "h3", "--tls", "1.2"}, nil, "h3 runs TLS 1.3 only"},
		{[]string{"--tls", "1.1"}, nil, `--tls "1.1"`},
		{[]string{"--proto", "h2,h2"}, nil, "listed twice"},
	} {
		fs := flag.NewFlagSet("page", flag.ContinueOnError)
		build := pageKind.Flags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		ws, err := build()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: %v; want an error containing %q", c.args, err, c.err)
			}
			continue
		}
		var got []string
		for _, w := range ws {
			got = append(got, w.Variant())
		}
		if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%v: %q, %v; want %q", c.args, got, err, c.want)
		}
	}
	if !Same(Page{}, Page{Proto: web.H1, TLS: web.TLS12}) || Same(Page{Proto: web.H1S}, Page{Proto: web.H1S, TLS: web.TLS12}) || !Same(Page{Proto: web.H2}, Page{Proto: web.H2, TLS: web.TLS13}) {
		t.Error("defaults: h1 ignores --tls, and TLS 1.3 is the default of h1s and h2")
	}
}

func TestProtoValidation(t *testing.T) {
	for _, c := range []struct {
		w    Workload
		want string
	}{
		{Page{Proto: "spdy"}, `protocol "spdy"`},
		{Page{Proto: web.H2, TLS: "1.0"}, `TLS version "1.0"`},
		{KeepAlive{Resume: true}, "resume needs TLS"},
		{Page{Proto: web.H3, TLS: web.TLS12}, "h3 runs TLS 1.3 only"},
	} {
		if err := c.w.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want an error containing %q", c.w, err, c.want)
		}
	}
}

// h2c is h2 without TLS: the same page on one connection, one TLS 1.3
// round trip sooner, and at unlimited rate exactly its model's round
// trips (TCP's one, then the rounds of the window).
func TestH2C(t *testing.T) {
	const rtt = 50 * time.Millisecond
	h2 := run1(t, Page{Proto: web.H2}, path(rtt, 10e6))
	h2c := run1(t, Page{Proto: web.H2C}, path(rtt, 10e6))
	if d := h2.Elapsed - h2c.Elapsed; h2c.Conns != 1 || d < 40*time.Millisecond || d > 60*time.Millisecond {
		t.Errorf("h2c %v on %d connections, h2 %v; want one connection and about one RTT (50ms) less", h2c.Elapsed, h2c.Conns, h2.Elapsed)
	}
	if v := (Page{Proto: web.H2C}).Variant(); v != "h2c" {
		t.Errorf("variant %q; want h2c", v)
	}
	r := run1(t, KeepAlive{Requests: 5, Mode: Fresh, Proto: web.H2C}, path(rtt, 0))
	if want := 10 * rtt; r.Elapsed != want || r.Model.Elapsed != want {
		t.Errorf("keepalive fresh over h2c: %v, model %v; want 5 × (TCP + request) = %v", r.Elapsed, r.Model.Elapsed, want)
	}
}
