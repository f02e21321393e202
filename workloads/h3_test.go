package workloads

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"

	"github.com/netemu/netemu/workloads/web"
)

// h3 on the real clock: the page arrives whole over one QUIC connection,
// no sooner than the model's round trips allow (the handshake, then the
// rounds of quic-go's congestion window; timers fire late, never early).
// Only shapes that cannot flake: the run's speed is the machine's.
func TestH3Page(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock run")
	}
	const rtt = 50 * time.Millisecond
	w := Page{Proto: web.H3, DNS: true, Timings: true}
	n, err := emu.New(emu.Config{Clock: emu.Real, Link: link.Config{Delay: rtt / 2, Rate: 10e6}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var r Result
	err = n.Run(context.Background(), func(ctx context.Context) error {
		var err error
		r, err = Run(ctx, w, n, path(rtt, 10e6))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes != DefaultPageTotal || r.Conns != 1 || r.Requests != DefaultPageResources {
		t.Errorf("%d bytes over %d connections, %d requests; want %d over 1, %d", r.Bytes, r.Conns, r.Requests, DefaultPageTotal, DefaultPageResources)
	}
	if want := time.Duration(r.Model.RoundTrips * float64(rtt)); r.Model.RoundTrips != 1+1+2 || r.Elapsed < want {
		t.Errorf("%v for %.0f round trips of the model; want at least %v (DNS, handshake, 2 rounds)", r.Elapsed, r.Model.RoundTrips, want)
	}
	d := r.Detail.(PageDetail)
	if len(d.Resources) != DefaultPageResources || d.Resources[0].Connect == nil || d.Resources[0].DNS == nil || d.Resources[1].Connect != nil {
		t.Errorf("timings: the first request should carry the lookup and the handshake, and only it: %s", js(t, d.Resources[:2]))
	}
}

// On the virtual clock h3 is refused, with the reason; h3, and only h3,
// declares that it needs the real clock.
func TestH3NeedsRealClock(t *testing.T) {
	n, err := emu.New(emu.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	err = n.Run(context.Background(), func(ctx context.Context) error {
		_, err := Run(ctx, Page{Proto: web.H3}, n, path(0, 0))
		return err
	})
	var ne *NeedError
	if !errors.As(err, &ne) || ne.Need.Of != RealClock || !strings.Contains(err.Error(), "quic-go reads the wall clock") {
		t.Errorf("h3 on the virtual clock: %v; want a NeedError for the real clock that says why", err)
	}
	for _, c := range []struct {
		w    Workload
		need bool
	}{{Page{Proto: web.H3}, true}, {KeepAlive{Proto: web.H3}, true}, {Page{Proto: web.H2}, false}, {Page{}, false}, {Bulk{}, false}} {
		ns := Needs(c.w)
		if got := len(ns) == 1 && ns[0].Of == RealClock && ns[0].Param == "proto" && ns[0].Value == "h3"; got != c.need || (!c.need && len(ns) > 0) {
			t.Errorf("%s %s needs %+v; want the real clock: %v", c.w.Name(), c.w.Variant(), ns, c.need)
		}
	}
}
