package workloads

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
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
			var ws []Workload
			for _, m := range ms {
				ws = append(ws, KeepAlive{Requests: n, Mode: m, Size: s})
			}
			return ws, err
		}
	},
	References: []Reference{
		{"keepalive, RTT 0 (loopback)", "fresh", KeepAlive{Mode: Fresh}, 0, 0, 2 * msec},
		{"keepalive, RTT 0 (loopback)", "reuse", KeepAlive{Mode: Reuse}, 0, 0, 1 * msec},
		{"keepalive, RTT 55 ms", "fresh", KeepAlive{Mode: Fresh}, 55 * msec, 0, 2360 * msec},
		{"keepalive, RTT 55 ms", "reuse", KeepAlive{Mode: Reuse}, 55 * msec, 0, 1195 * msec},
	},
	Lossy: []Cell{
		{"keepalive, RTT 55 ms", "fresh, loss 1%", KeepAlive{Mode: Fresh}, lossyLink(0, 55*msec, func(c *link.Config) { c.Loss = link.RandomLoss(0.01, 0) })},
		{"keepalive, RTT 55 ms", "reuse, loss 1%", KeepAlive{Mode: Reuse}, lossyLink(0, 55*msec, func(c *link.Config) { c.Loss = link.RandomLoss(0.01, 0) })},
	},
}

// KeepAlive makes Requests sequential small requests, each on a fresh
// connection or all on one reused connection.
type KeepAlive struct {
	Requests int      // 0 means DefaultKeepAliveRequests
	Mode     ConnMode // Fresh or Reuse; "" means Reuse
	Size     int      // response bytes; 0 means DefaultKeepAliveSize
}

// KeepAliveDetail is KeepAlive's own figures.
type KeepAliveDetail struct {
	Mode       ConnMode
	PerRequest time.Duration // Elapsed ÷ Requests
}

// Summary implements Detail.
func (d KeepAliveDetail) Summary() string { return link.FormatDuration(d.PerRequest) + " per request" }

// MarshalJSON writes the record's keepalive fields.
func (d KeepAliveDetail) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Mode       ConnMode `json:"mode"`
		PerRequest float64  `json:"per_request_ms"`
	}{d.Mode, ms(d.PerRequest)})
}

// Name implements Workload.
func (KeepAlive) Name() string { return "keepalive" }

// Variant implements Workload: the mode.
func (k KeepAlive) Variant() string { return string(k.WithDefaults().(KeepAlive).Mode) }

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
	}
	return nil
}

// Model: fresh costs two round trips per request (handshake and
// request), reuse one per request plus one handshake.
func (k KeepAlive) Model(path Path) Model {
	k = k.WithDefaults().(KeepAlive)
	rt := float64(k.Requests + 1)
	if k.Mode == Fresh {
		rt = float64(2 * k.Requests)
	}
	return model(path, rt, int64(k.Requests*k.Size), 0)
}

// Run implements Workload.
func (k KeepAlive) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	srv, err := startServer(env, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		blob(w, k.Size)
	}))
	if err != nil {
		return Result{}, err
	}
	defer srv.stop()
	cl := newClient(env, 1)
	defer cl.tr.CloseIdleConnections()
	var bytes int64
	start := env.Now()
	for i := range k.Requests {
		n, err := cl.get(ctx, fmt.Sprintf("http://server/r/%02d", i))
		if err != nil {
			return Result{}, fmt.Errorf("request %d: %w", i, err)
		}
		bytes += n
		if k.Mode == Fresh {
			// The connection is idle once the body is read; closing it
			// here, on this goroutine, sends the FIN before the next SYN.
			cl.tr.CloseIdleConnections()
		}
	}
	elapsed := env.Now().Sub(start)
	return Result{
		Started:  start,
		Elapsed:  elapsed,
		Bytes:    bytes,
		Conns:    cl.opened(),
		Requests: k.Requests,
		Detail:   KeepAliveDetail{Mode: k.Mode, PerRequest: elapsed / time.Duration(k.Requests)},
	}, nil
}
