package workloads

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/netemu/netemu/emu"
)

// Page fetches Resources resources totalling Total bytes over HTTP/1.1
// with at most Conns parallel keep-alive connections, as a browser loads
// a page's assets.
type Page struct {
	Resources int // default 40
	Total     int // bytes, default 120 KB (120,000)
	Conns     int // default 6
}

// Name implements Workload.
func (Page) Name() string { return "page" }

func (p Page) withDefaults() Page {
	if p.Resources == 0 {
		p.Resources = 40
	}
	if p.Total == 0 {
		p.Total = 120_000
	}
	if p.Conns == 0 {
		p.Conns = 6
	}
	return p
}

// Validate implements Workload.
func (p Page) Validate() error {
	switch {
	case p.Resources < 0:
		return fmt.Errorf("page: resources is %d; want 1 or more", p.Resources)
	case p.Total < 0:
		return fmt.Errorf("page: total is %d bytes; want 0 or more", p.Total)
	case p.Conns < 0:
		return fmt.Errorf("page: conns is %d; want 1 or more", p.Conns)
	}
	return nil
}

// size is resource i's size: Total spread evenly, the remainder on the
// first resources.
func (p Page) size(i int) int {
	s := p.Total / p.Resources
	if i < p.Total%p.Resources {
		s++
	}
	return s
}

// Model: one round trip for the handshakes (in parallel), then one per
// wave of Conns requests, plus the bytes at the link's rate.
func (p Page) Model(path Path) Model {
	p = p.withDefaults()
	return model(path, float64(1+ceilDiv(p.Resources, p.Conns)), int64(p.Total), 0)
}

// Run implements Workload.
func (p Page) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	p = p.withDefaults()
	srv, err := startServer(env, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
		if err != nil || i < 0 || i >= p.Resources {
			http.NotFound(w, r)
			return
		}
		blob(w, p.size(i))
	}))
	if err != nil {
		return Result{}, err
	}
	defer srv.stop()
	cl := newClient(env, p.Conns)
	defer cl.tr.CloseIdleConnections()

	var (
		mu    sync.Mutex
		next  int
		bytes int64
		first error
		wg    sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= p.Resources || first != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	start := env.Now()
	// The workers start one at a time (env.Go), so each opens its
	// connection in the same order on every run; afterwards whichever
	// worker finishes first takes the next resource.
	for range min(p.Conns, p.Resources) {
		wg.Add(1)
		env.Go(func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				n, err := cl.get(ctx, fmt.Sprintf("http://server/r/%02d", i))
				mu.Lock()
				bytes += n
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := env.Now().Sub(start)
	if first != nil {
		return Result{}, fmt.Errorf("page: %w", first)
	}
	if bytes != int64(p.Total) {
		return Result{}, fmt.Errorf("page: received %d bytes of %d", bytes, p.Total)
	}
	r := Result{
		Workload: "page",
		Started:  start,
		Elapsed:  elapsed,
		Model:    p.Model(path),
		Bytes:    bytes,
		Conns:    cl.opened(),
		Requests: p.Resources,
	}
	r.RequestsPerConn = float64(r.Requests) / float64(r.Conns)
	return r, nil
}
