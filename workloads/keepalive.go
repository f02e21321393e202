package workloads

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/netemu/netemu/emu"
)

// Keep-alive modes.
const (
	Fresh = "fresh" // a new connection per request, closed after it
	Reuse = "reuse" // one connection for all requests
)

// KeepAlive makes Requests sequential small requests, each on a fresh
// connection or all on one reused connection.
type KeepAlive struct {
	Requests int    // default 20
	Mode     string // Fresh or Reuse; default Reuse
	Size     int    // response bytes, default 1000
}

// Name implements Workload.
func (KeepAlive) Name() string { return "keepalive" }

func (k KeepAlive) withDefaults() KeepAlive {
	if k.Requests == 0 {
		k.Requests = 20
	}
	if k.Mode == "" {
		k.Mode = Reuse
	}
	if k.Size == 0 {
		k.Size = 1000
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
	k = k.withDefaults()
	rt := float64(k.Requests + 1)
	if k.Mode == Fresh {
		rt = float64(2 * k.Requests)
	}
	return model(path, rt, int64(k.Requests*k.Size), 0)
}

// Run implements Workload.
func (k KeepAlive) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	if err := k.Validate(); err != nil {
		return Result{}, err
	}
	k = k.withDefaults()
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
			return Result{}, fmt.Errorf("keepalive: request %d: %w", i, err)
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
		Workload:   "keepalive",
		Started:    start,
		Elapsed:    elapsed,
		Model:      k.Model(path),
		Bytes:      bytes,
		Conns:      cl.opened(),
		Requests:   k.Requests,
		Mode:       k.Mode,
		PerRequest: elapsed / time.Duration(k.Requests),
	}, nil
}
