package web

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http/httptrace"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/netemu/netemu/emu"
)

// Per-resource timings, as a browser's network panel shows them: for each
// resource the phases of the connection it opened (DNS, connect, TLS),
// then request sent, first response byte and last byte, on the run's
// clock from the run's start. They come from net/http/httptrace; the
// client's dialer reports DNS and connect to the request's trace as
// net.Dialer would, and h2's dial reports its own TLS handshake.

// Span is a phase of a fetch: from Start to End, both from the run's
// start.
type Span struct{ Start, End time.Duration }

// ms is a duration in milliseconds, as the JSON records write it.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// MarshalJSON writes the span as [start_ms, end_ms].
func (s Span) MarshalJSON() ([]byte, error) { return json.Marshal([2]float64{ms(s.Start), ms(s.End)}) }

// ResourceTiming is one resource's fetch. Times count from the start
// Client.Time was given. A phase is nil when the fetch did not take it:
// DNS, Connect and TLS belong to the request that first used a new
// connection; a request on a reused connection has none.
type ResourceTiming struct {
	Path      string        // the URL's path: /r/07
	Conn      int           // the connection that carried it, from 1, in the order they were opened
	Start     time.Duration // the request was issued
	DNS       *Span         // the host name's lookup
	Connect   *Span         // TCP's handshake
	TLS       *Span         // TLS's handshake
	Sent      time.Duration // the request was written
	FirstByte time.Duration // the response's first byte arrived
	LastByte  time.Duration // the body was read to its end
}

// MarshalJSON writes the timing in milliseconds, phases as [start, end].
func (r ResourceTiming) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Path      string  `json:"path"`
		Conn      int     `json:"conn"`
		Start     float64 `json:"start_ms"`
		DNS       *Span   `json:"dns_ms,omitempty"`
		Connect   *Span   `json:"connect_ms,omitempty"`
		TLS       *Span   `json:"tls_ms,omitempty"`
		Sent      float64 `json:"sent_ms"`
		FirstByte float64 `json:"first_byte_ms"`
		LastByte  float64 `json:"last_byte_ms"`
	}{r.Path, r.Conn, ms(r.Start), r.DNS, r.Connect, r.TLS, ms(r.Sent), ms(r.FirstByte), ms(r.LastByte)})
}

// stopwatch records the timings of a client's requests.
type stopwatch struct {
	env   emu.Env
	start time.Time

	mu    sync.Mutex
	fetch []*fetch
	conns map[string]int // a connection's local address → its number
}

// fetch is one request's timing in the making: the resource's, and the
// phases of the dial its request started, which may end up carrying
// another request (whichever was waiting when it completed).
type fetch struct {
	ResourceTiming
	conn   string // local address of the connection that carried it
	fresh  bool   // it was the connection's first request
	dialed string // local address of the connection its dial opened
	dial   struct{ dns, connect, tls *Span }
}

type fetchKey struct{}

// issuedKey marks when a request was issued, if before the client's get
// (a page's h2 requests wait for their turn to be sent).
type issuedKey struct{}

// issued returns ctx marking that its request is issued now.
func (s *stopwatch) issued(ctx context.Context) context.Context {
	return context.WithValue(ctx, issuedKey{}, s.now())
}

func newStopwatch(env emu.Env, start time.Time) *stopwatch {
	return &stopwatch{env: env, start: start, conns: map[string]int{}}
}

func (s *stopwatch) now() time.Duration { return s.env.Now().Sub(s.start) }

// opened numbers a new connection, by its local address.
func (s *stopwatch) opened(local net.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[local.String()] = len(s.conns) + 1
}

// request returns ctx with a trace that records the fetch of path, and
// the function to call once its body is read.
func (s *stopwatch) request(ctx context.Context, path string) (context.Context, func()) {
	start, ok := ctx.Value(issuedKey{}).(time.Duration)
	if !ok {
		start = s.now()
	}
	f := &fetch{ResourceTiming: ResourceTiming{Path: path, Start: start}}
	s.mu.Lock()
	s.fetch = append(s.fetch, f)
	s.mu.Unlock()
	// set records a time under the lock: the dial's hooks run on the
	// dialing goroutine, the others on the request's.
	set := func(fn func(now time.Duration)) {
		now := s.now()
		s.mu.Lock()
		defer s.mu.Unlock()
		fn(now)
	}
	begin := func(p **Span) func() {
		return func() { set(func(now time.Duration) { *p = &Span{Start: now, End: now} }) }
	}
	end := func(p **Span) func() {
		return func() {
			set(func(now time.Duration) {
				if *p != nil {
					(*p).End = now
				}
			})
		}
	}
	trace := &httptrace.ClientTrace{
		DNSStart:          func(httptrace.DNSStartInfo) { begin(&f.dial.dns)() },
		DNSDone:           func(httptrace.DNSDoneInfo) { end(&f.dial.dns)() },
		ConnectStart:      func(string, string) { begin(&f.dial.connect)() },
		ConnectDone:       func(string, string, error) { end(&f.dial.connect)() },
		TLSHandshakeStart: begin(&f.dial.tls),
		TLSHandshakeDone:  func(tls.ConnectionState, error) { end(&f.dial.tls)() },
		GotConn: func(info httptrace.GotConnInfo) {
			set(func(time.Duration) {
				if f.conn == "" {
					f.conn, f.fresh = info.Conn.LocalAddr().String(), !info.Reused
				}
			})
		},
		WroteRequest:         func(httptrace.WroteRequestInfo) { set(func(now time.Duration) { f.Sent = now }) },
		GotFirstResponseByte: func() { set(func(now time.Duration) { f.FirstByte = now }) },
	}
	ctx = context.WithValue(httptrace.WithClientTrace(ctx, trace), fetchKey{}, f)
	return ctx, func() { set(func(now time.Duration) { f.LastByte = now }) }
}

// dialed notes that the dial started by ctx's request opened the
// connection at local.
func (s *stopwatch) dialed(ctx context.Context, local net.Addr) {
	if f, ok := ctx.Value(fetchKey{}).(*fetch); ok {
		s.mu.Lock()
		f.dialed = local.String()
		s.mu.Unlock()
	}
}

// timings returns the fetches in the order they were issued (by path
// among those issued at one instant): each connection's phases go to the
// first request it carried; others that waited for it show that wait as
// queued.
func (s *stopwatch) timings() []ResourceTiming {
	s.mu.Lock()
	defer s.mu.Unlock()
	fetches := slices.Clone(s.fetch)
	slices.SortStableFunc(fetches, func(a, b *fetch) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Path, b.Path))
	})
	dials := map[string]*fetch{}
	for _, f := range fetches {
		if f.dialed != "" {
			dials[f.dialed] = f
		}
	}
	out := make([]ResourceTiming, len(fetches))
	for i, f := range fetches {
		r := f.ResourceTiming
		r.Conn = s.conns[f.conn]
		if d, ok := dials[f.conn]; ok && f.fresh {
			r.DNS, r.Connect, r.TLS = d.dial.dns, d.dial.connect, d.dial.tls
			delete(dials, f.conn)
		}
		out[i] = r
	}
	return out
}

// traceConnect reports a dial's connect to ctx's trace, as net.Dialer
// does: ConnectStart now, ConnectDone when the returned function is
// called.
func traceConnect(ctx context.Context) func(error) {
	t := httptrace.ContextClientTrace(ctx)
	if t == nil {
		return func(error) {}
	}
	if t.ConnectStart != nil {
		t.ConnectStart("tcp", serverName)
	}
	return func(err error) {
		if t.ConnectDone != nil {
			t.ConnectDone("tcp", serverName, err)
		}
	}
}

// traceDNS reports a lookup of host to ctx's trace, as net.Resolver does.
func traceDNS(ctx context.Context, host string) func(netip.Addr, error) {
	t := httptrace.ContextClientTrace(ctx)
	if t == nil {
		return func(netip.Addr, error) {}
	}
	if t.DNSStart != nil {
		t.DNSStart(httptrace.DNSStartInfo{Host: host})
	}
	return func(a netip.Addr, err error) {
		if t.DNSDone != nil {
			info := httptrace.DNSDoneInfo{Err: err}
			if err == nil {
				info.Addrs = []net.IPAddr{{IP: a.AsSlice()}}
			}
			t.DNSDone(info)
		}
	}
}

// traceTLS reports a TLS handshake made outside net/http to ctx's trace.
func traceTLS(ctx context.Context) func(tls.ConnectionState, error) {
	t := httptrace.ContextClientTrace(ctx)
	if t == nil {
		return func(tls.ConnectionState, error) {}
	}
	if t.TLSHandshakeStart != nil {
		t.TLSHandshakeStart()
	}
	return func(cs tls.ConnectionState, err error) {
		if t.TLSHandshakeDone != nil {
			t.TLSHandshakeDone(cs, err)
		}
	}
}
