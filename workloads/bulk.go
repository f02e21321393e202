package workloads

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/netemu/netemu/emu"
)

// Bulk downloads one Size-byte resource over one HTTP connection.
type Bulk struct {
	Size int // bytes, default 5 MiB
}

// Name implements Workload.
func (Bulk) Name() string { return "bulk" }

func (b Bulk) withDefaults() Bulk {
	if b.Size == 0 {
		b.Size = 5 << 20
	}
	return b
}

// Validate implements Workload.
func (b Bulk) Validate() error {
	if b.Size < 0 {
		return fmt.Errorf("bulk: size is %d bytes; want 1 or more", b.Size)
	}
	return nil
}

// Model: a handshake and a request (two round trips), then the bytes at
// the link's rate; slow start is not modelled.
func (b Bulk) Model(path Path) Model {
	b = b.withDefaults()
	return model(path, 2, int64(b.Size), 0)
}

// Run implements Workload.
func (b Bulk) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	if err := b.Validate(); err != nil {
		return Result{}, err
	}
	b = b.withDefaults()
	srv, err := startServer(env, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		blob(w, b.Size)
	}))
	if err != nil {
		return Result{}, err
	}
	defer srv.stop()
	cl := newClient(env, 1)
	defer cl.tr.CloseIdleConnections()
	start := env.Now()
	n, err := cl.get(ctx, "http://server/file")
	elapsed := env.Now().Sub(start)
	if err != nil {
		return Result{}, fmt.Errorf("bulk: %w", err)
	}
	if n != int64(b.Size) {
		return Result{}, fmt.Errorf("bulk: received %d bytes of %d", n, b.Size)
	}
	return Result{
		Workload: "bulk",
		Started:  start,
		Elapsed:  elapsed,
		Model:    b.Model(path),
		Bytes:    n,
		Conns:    cl.opened(),
		Requests: 1,
		Goodput:  goodput(n, elapsed),
	}, nil
}

// goodput is payload bits per second; 0 when no time passed (an ideal
// link on the virtual clock), where it has no finite value.
func goodput(n int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(n) * 8 / elapsed.Seconds()
}
