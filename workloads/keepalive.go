package workloads

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
)

// ConnMode says whether KeepAlive reuses its connection.
type ConnMode string

// Keep-alive modes.
const (
	Fresh ConnMode = "fresh" // a new connection per request, closed after it
	Reuse ConnMode = "reuse" // one connection for all requests
)

// KeepAlive's defaults.
const (
	DefaultKeepAliveRequests = 20
	DefaultKeepAliveSize     = 1000 // response bytes
)

var keepAliveKind = Kind{
	Name:  "keepalive",
	About: "sequential requests, each on a new connection or all on one",
	Flags: func(fs *flag.FlagSet) func() ([]Workload, error) {
		requests := positive(fs, "requests", DefaultKeepAliveRequests, "sequential requests")
		response := size(fs, "response", DefaultKeepAliveSize, 0, "1KB", "bytes of each response")
		modes := variants(fs, "mode", "both", "fresh, reuse or both", Fresh, Reuse)
		protos := protoFlags(fs)
		resume := boolVariants(fs, "resume", "false", "resume TLS sessions on fresh connections (h1s, h2): true, false or both")
		timings := fs.Bool("timings", false, timingsHelp)
		dns := boolVariants(fs, "dns", "false", dnsHelp)
		return func() ([]Workload, error) {
			n, err := requests()
			if err != nil {
				return nil, err
			}
			s, err := response()
			if err != nil {
				return nil, err
			}
			ms, err := modes()
			if err != nil {
				return nil, err
			}
			ps, err := protos()
			if err != nil {
				return nil, err
			}
			rs, err := resume()
			if err != nil {
				return nil, err
			}
			resumable := slices.ContainsFunc(ps, func(p [2]string) bool { return Proto(p[0]).secure() && Proto(p[0]) != H3 }) && slices.Contains(ms, Fresh)
			if slices.Contains(rs, true) && !resumable {
				return nil, fmt.Errorf("--resume: TLS sessions resume on fresh connections over TLS; add --proto h1s or h2 and --mode fresh (or both)")
			}
			ds, err := dns()
			if err != nil {
				return nil, err
			}
			var ws []Workload
			for _, p := range ps {
				for _, m := range ms {
					for _, r := range rs {
						// Resumption only matters where a fresh
						// connection makes a TLS handshake again.
						if r && (m != Fresh || !Proto(p[0]).secure()) {
							if len(rs) > 1 {
								continue
							}
							r = false
						}
						for _, d := range ds {
							ws = append(ws, KeepAlive{Requests: n, Mode: m, Size: s, Proto: Proto(p[0]), TLS: TLSVersion(p[1]), Resume: r, DNS: d, Timings: *timings})
						}
					}
				}
			}
			return ws, nil
		}
	},
	References: []Reference{
		{"keepalive, RTT 0 (loopback)", "fresh", KeepAlive{Mode: Fresh}, 0, 0, 2 * msec},
		{"keepalive, RTT 0 (loopback)", "reuse", KeepAlive{Mode: Reuse}, 0, 0, 1 * msec},
		{"keepalive, RTT 55 ms", "fresh", KeepAlive{Mode: Fresh}, 55 * msec, 0, 2360 * msec},
		{"keepalive, RTT 55 ms", "reuse", KeepAlive{Mode: Reuse}, 55 * msec, 0, 1195 * msec},
	},
	Lossy: []Cell{
		// A lost SYN or SYN-ACK costs a 1 s timeout and a lost request
		// about 0.3 s, so the times have modes that far apart; over 5
		// seeds the medians of gVisor and Linux ranged 2505–3226 ms, over
		// 20 and 40 seeds they agreed within 1.2 %.
		{"keepalive, RTT 55 ms", "fresh, loss 1%", KeepAlive{Mode: Fresh}, lossyLink(0, 55*msec, func(c *link.Config) { c.Loss = link.RandomLoss(0.01, 0) }), 30},
		{"keepalive, RTT 55 ms", "reuse, loss 1%", KeepAlive{Mode: Reuse}, lossyLink(0, 55*msec, func(c *link.Config) { c.Loss = link.RandomLoss(0.01, 0) }), 0},
	},
}

// KeepAlive makes Requests sequential small requests, each on a fresh
// connection or all on one reused connection, over HTTP/1.1 (plain or
// over TLS) or HTTP/2.
type KeepAlive struct {
	Requests int        // 0 means DefaultKeepAliveRequests
	Mode     ConnMode   // Fresh or Reuse; "" means Reuse
	Size     int        // response bytes; 0 means DefaultKeepAliveSize
	Proto    Proto      // "" means H1
	TLS      TLSVersion // h1s and h2 only; "" means DefaultTLS
	// Resume resumes TLS sessions from tickets: each fresh connection
	// after the first makes an abbreviated handshake. h1s and h2 only.
	Resume  bool
	DNS     bool // look the server's name up before the first connection (see dns.go)
	Timings bool // record each request's timings (KeepAliveDetail.Requests)
}

// KeepAliveDetail is KeepAlive's own figures.
type KeepAliveDetail struct {
	Mode       ConnMode
	PerRequest time.Duration    // Elapsed ÷ Requests
	Proto      Proto            // "" for h1, which records leave out
	TLS        TLSVersion       // "" without TLS
	Resumed    int              // connections whose TLS session resumed
	DNS        bool             // the name was looked up
	Requests   []ResourceTiming // in request order; nil unless KeepAlive.Timings
}

// Timings implements Timings.
func (d KeepAliveDetail) Timings() []ResourceTiming { return d.Requests }

// Summary implements Detail.
func (d KeepAliveDetail) Summary() string { return link.FormatDuration(d.PerRequest) + " per request" }

// MarshalJSON writes the record's keepalive fields.
func (d KeepAliveDetail) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Mode       ConnMode         `json:"mode"`
		PerRequest float64          `json:"per_request_ms"`
		Proto      Proto            `json:"proto,omitempty"`
		TLS        TLSVersion       `json:"tls,omitempty"`
		Resumed    *int             `json:"resumed_conns,omitempty"`
		DNS        bool             `json:"dns,omitempty"`
		Requests   []ResourceTiming `json:"resources,omitempty"`
	}{d.Mode, ms(d.PerRequest), d.Proto, d.TLS, resumedField(d), d.DNS, d.Requests})
}

// Name implements Workload.
func (KeepAlive) Name() string { return "keepalive" }

// Variant implements Workload: the mode, then the protocol unless h1,
// then "resumed" if sessions resume.
func (k KeepAlive) Variant() string {
	k = k.WithDefaults().(KeepAlive)
	v := string(k.Mode)
	if l := protoLabel(k.Proto, k.TLS); l != "" {
		v += ", " + l
	}
	if k.Resume {
		v += ", resumed"
	}
	return withDNS(v, k.DNS)
}

// WithTimings implements Timed.
func (k KeepAlive) WithTimings(on bool) Workload { k.Timings = on; return k }

// WithDefaults implements Workload.
func (k KeepAlive) WithDefaults() Workload {
	if k.Requests == 0 {
		k.Requests = DefaultKeepAliveRequests
	}
	if k.Mode == "" {
		k.Mode = Reuse
	}
	if k.Size == 0 {
		k.Size = DefaultKeepAliveSize
	}
	k.Proto, k.TLS = protoDefaults(k.Proto, k.TLS)
	return k
}

// Validate implements Workload.
func (k KeepAlive) Validate() error {
	switch {
	case k.Requests < 0:
		return fmt.Errorf("keepalive: requests is %d; want 1 or more", k.Requests)
	case k.Mode != "" && k.Mode != Fresh && k.Mode != Reuse:
		return fmt.Errorf("keepalive: mode %q is unknown; want %q or %q", k.Mode, Fresh, Reuse)
	case k.Size < 0:
		return fmt.Errorf("keepalive: size is %d bytes; want 0 or more", k.Size)
	case k.Resume && !Proto(k.Proto).secure():
		return fmt.Errorf("keepalive: resume needs TLS; want protocol h1s or h2, not %q", k.Proto)
	}
	return validateProto("keepalive", k.Proto, k.TLS)
}

// Model: each request costs one round trip, and each connection its
// handshakes (TCP one, TLS 1.3 one more, TLS 1.2 two more, one when a
// TLS 1.2 session resumes): fresh pays them per request, the first
// connection in full and the others resumed if sessions resume; reuse
// pays them once. With DNS the first connection waits one round trip
// more for the lookup; the others find the name cached.
func (k KeepAlive) Model(path Path) Model {
	k = k.WithDefaults().(KeepAlive)
	full := handshakeRTTs(k.Proto, k.TLS, false)
	rt := float64(k.Requests) + full
	if k.Mode == Fresh {
		rt = float64(k.Requests) + full + float64(k.Requests-1)*handshakeRTTs(k.Proto, k.TLS, k.Resume)
	}
	return model(path, dnsRTTs(k.DNS)+rt, int64(k.Requests*k.Size), 0)
}

// Run implements Workload.
func (k KeepAlive) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	web, err := newWeb(env, k.Proto, k.TLS, k.Resume)
	if err != nil {
		return Result{}, err
	}
	web.dns = k.DNS
	srv, err := startServer(env, web, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		blob(w, k.Size)
	}))
	if err != nil {
		return Result{}, err
	}
	defer srv.stop()
	var resumed atomic.Int64
	if web.client != nil {
		// Count the handshakes that resumed a session.
		web.client = web.client.Clone()
		web.client.VerifyConnection = func(cs tls.ConnectionState) error {
			if cs.DidResume {
				resumed.Add(1)
			}
			return nil
		}
	}
	cl := newClient(env, web, 1)
	defer cl.close()
	var bytes int64
	start := env.Now()
	if k.Timings {
		cl.timed(env, start)
	}
	for i := range k.Requests {
		n, err := cl.get(ctx, web, fmt.Sprintf("/r/%02d", i))
		if err != nil {
			return Result{}, fmt.Errorf("request %d: %w", i, err)
		}
		bytes += n
		if k.Mode == Fresh {
			// The connection is idle once the body is read; closing it
			// here, on this goroutine, sends the FIN before the next SYN.
			cl.closeIdle()
		}
	}
	elapsed := env.Now().Sub(start)
	return Result{
		Started:  start,
		Elapsed:  elapsed,
		Bytes:    bytes,
		Conns:    cl.opened(),
		Requests: k.Requests,
		Detail:   KeepAliveDetail{Mode: k.Mode, PerRequest: elapsed / time.Duration(k.Requests), Proto: recorded(k.Proto), TLS: k.TLS, Resumed: int(resumed.Load()), DNS: k.DNS, Requests: cl.timings()},
	}, nil
}

// resumedField is the record's resumed_conns: present over TLS only.
func resumedField(d KeepAliveDetail) *int {
	if d.TLS == "" {
		return nil
	}
	return &d.Resumed
}
