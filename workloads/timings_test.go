package workloads

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/workloads/web"
)

// On a link without a rate the phases are whole round trips: each fresh
// connection of keepalive takes one for TCP, one for TLS 1.3 and one for
// its request, in sequence.
func TestTimingsAreRoundTrips(t *testing.T) {
	const rtt = 50 * time.Millisecond
	r, _ := run(t, KeepAlive{Requests: 3, Mode: Fresh, Proto: web.H1S, Timings: true}, path(rtt, 0))
	got := r.Detail.(KeepAliveDetail).Requests
	if len(got) != 3 {
		t.Fatalf("%d timings; want 3", len(got))
	}
	for i, g := range got {
		at := time.Duration(3*i) * rtt
		want := web.ResourceTiming{
			Path: fmt.Sprintf("/r/%02d", i), Conn: i + 1, Start: at,
			Connect: &web.Span{Start: at, End: at + rtt}, TLS: &web.Span{Start: at + rtt, End: at + 2*rtt},
			Sent: at + 2*rtt, FirstByte: at + 3*rtt, LastByte: at + 3*rtt,
		}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("request %d: %s; want %s", i, js(t, g), js(t, want))
		}
	}
	if last := got[2].LastByte; last != r.Elapsed {
		t.Errorf("last byte at %v; the run took %v", last, r.Elapsed)
	}
}

// A page's timings: one per resource in request order, the handshakes on
// the first request of each connection and on no other, phases in order,
// the last byte of the page at the run's end.
func TestPageTimings(t *testing.T) {
	for _, w := range []Page{{Timings: true}, {Proto: web.H1S, TLS: web.TLS12, Timings: true}, {Proto: web.H2, Timings: true}} {
		r, _ := run(t, w, path(50*time.Millisecond, 10e6))
		d := r.Detail.(PageDetail)
		if len(d.Resources) != DefaultPageResources {
			t.Fatalf("%s: %d timings; want %d", w.Variant(), len(d.Resources), DefaultPageResources)
		}
		seen := map[int]bool{}
		var last time.Duration
		for i, g := range d.Resources {
			if g.Path != fmt.Sprintf("/r/%02d", i) {
				t.Errorf("%s: timing %d is of %s", w.Variant(), i, g.Path)
			}
			if g.Conn < 1 || g.Conn > r.Conns {
				t.Errorf("%s: %s on connection %d of %d", w.Variant(), g.Path, g.Conn, r.Conns)
			}
			first := !seen[g.Conn]
			seen[g.Conn] = true
			if (g.Connect != nil) != first || (g.TLS != nil) != (first && w.Proto.Secure()) || g.DNS != nil {
				t.Errorf("%s: %s, first on its connection %v: %s", w.Variant(), g.Path, first, js(t, g))
			}
			at := []time.Duration{g.Start}
			for _, s := range []*web.Span{g.Connect, g.TLS} {
				if s != nil {
					at = append(at, s.Start, s.End)
				}
			}
			at = append(at, g.Sent, g.FirstByte, g.LastByte)
			for j := 1; j < len(at); j++ {
				if at[j] < at[j-1] {
					t.Errorf("%s: %s's phases out of order: %s", w.Variant(), g.Path, js(t, g))
					break
				}
			}
			last = max(last, g.LastByte)
		}
		if len(seen) != r.Conns || last != r.Elapsed {
			t.Errorf("%s: %d connections carried requests of %d; last byte at %v of %v", w.Variant(), len(seen), r.Conns, last, r.Elapsed)
		}
	}
}

// On the virtual clock the timings are the same on every run.
func TestTimingsDeterministic(t *testing.T) {
	for _, w := range []Page{{Timings: true}, {Proto: web.H1S, Timings: true}} {
		a, _ := run(t, w, path(50*time.Millisecond, 10e6))
		for range 3 {
			b, _ := run(t, w, path(50*time.Millisecond, 10e6))
			if !reflect.DeepEqual(a.Detail, b.Detail) {
				t.Fatalf("%s: timings differ:\n%s\n%s", w.Variant(), js(t, a.Detail), js(t, b.Detail))
			}
		}
	}
}

// Without Timings a record has no resources field, and the workload is
// the same workload as with them.
func TestTimingsOnlyWhenAsked(t *testing.T) {
	r, _ := run(t, Page{Resources: 4}, path(50*time.Millisecond, 10e6))
	if s := js(t, r.Detail); strings.Contains(s, "resources") {
		t.Errorf("record without timings: %s", s)
	}
	if !Same(Page{}, Page{Timings: true}) || !Same(KeepAlive{}, KeepAlive{Timings: true}) {
		t.Error("a workload with timings is not the same as without")
	}
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
