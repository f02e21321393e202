package workloads

import (
	"context"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"

	"github.com/netemu/netemu/workloads/web"
)

// With DNS the first connection waits one round trip more, and only the
// first: at unlimited rate keepalive takes the model's round trips
// exactly, and exactly one query and one answer cross the link.
func TestDNSOneLookup(t *testing.T) {
	const rtt = 50 * time.Millisecond
	for _, c := range []struct {
		w    KeepAlive
		rtts int
	}{
		{KeepAlive{Requests: 5, Mode: Fresh, DNS: true}, 1 + 5*2},
		{KeepAlive{Requests: 5, Mode: Reuse, DNS: true}, 1 + 1 + 5},
		{KeepAlive{Requests: 5, Mode: Fresh, Proto: web.H2, DNS: true}, 1 + 5*3},
	} {
		n, err := emu.New(emu.Config{Link: link.Config{Delay: rtt / 2}, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		udp := 0
		n.Observe(func(e link.Event) {
			if e.Kind == link.EventDeliver && len(e.Packet) > 9 && e.Packet[9] == 17 {
				udp++
			}
		})
		var r Result
		err = n.Run(context.Background(), func(ctx context.Context) error {
			var err error
			r, err = Run(ctx, c.w, n, path(rtt, 0))
			return err
		})
		n.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := time.Duration(c.rtts) * rtt
		if r.Elapsed != want || r.Model.Elapsed != want {
			t.Errorf("%s: %v, model %v; want %d round trips (%v)", c.w.Variant(), r.Elapsed, r.Model.Elapsed, c.rtts, want)
		}
		if udp != 2 {
			t.Errorf("%s: %d UDP packets crossed the link; want a query and its answer", c.w.Variant(), udp)
		}
		if !r.Detail.(KeepAliveDetail).DNS {
			t.Errorf("%s: the detail does not say DNS", c.w.Variant())
		}
	}
}

// A page's six connections wait for one lookup, and open in order once
// it is answered; the lookup shows on their first requests only, and the
// run is the same every time.
func TestPageDNS(t *testing.T) {
	const rtt = 50 * time.Millisecond
	w := Page{Proto: web.H1S, DNS: true, Timings: true}
	a, sa := run(t, w, path(rtt, 10e6))
	for i, g := range a.Detail.(PageDetail).Resources {
		switch {
		case i < DefaultPageConns && (g.DNS == nil || g.DNS.Start != 0 || g.DNS.End < rtt || g.DNS.End > rtt+time.Millisecond || g.Conn != i+1):
			t.Errorf("%s: %s", g.Path, js(t, g))
		case i >= DefaultPageConns && g.DNS != nil:
			t.Errorf("%s looked the name up again: %s", g.Path, js(t, g))
		}
	}
	for range 3 {
		b, sb := run(t, w, path(rtt, 10e6))
		if sb.TraceHash != sa.TraceHash || !reflect.DeepEqual(a.Detail, b.Detail) {
			t.Fatalf("two runs differ: trace %s, %s", sa.TraceHash[:12], sb.TraceHash[:12])
		}
	}
	if v := w.Variant(); v != "h1s, TLS 1.3, DNS" {
		t.Errorf("variant %q", v)
	}
	if _, err := netip.ParseAddr(emu.ServerAddr.String()); err != nil {
		t.Fatal(err)
	}
}
