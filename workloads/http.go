package workloads

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/netemu/netemu/emu"
)

// The HTTP workloads' server and client.

const httpPort = 80

// server runs an HTTP/1.1 server on the env's server side until stop is
// called. Responses carry a Date from the run's clock, so that virtual
// runs send the same bytes every time.
type server struct {
	srv  *http.Server
	done chan struct{}
}

func startServer(env emu.Env, h http.Handler) (*server, error) {
	ln, err := env.Listen(httpPort)
	if err != nil {
		return nil, err
	}
	s := &server{done: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", env.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/octet-stream")
		h.ServeHTTP(w, r)
	})}
	env.Go(func() {
		defer close(s.done)
		s.srv.Serve(ln)
	})
	return s, nil
}

func (s *server) stop() {
	s.srv.Close()
	<-s.done
}

// blob serves n bytes of a fixed pattern.
func blob(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Length", strconv.Itoa(n))
	chunk := pattern(min(n, 32<<10))
	for n > 0 {
		m, err := w.Write(chunk[:min(n, len(chunk))])
		if err != nil {
			return
		}
		n -= m
	}
}

// pattern returns n bytes of a fixed pattern.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// client is an HTTP client whose connections go through env, counting
// them.
type client struct {
	*http.Client
	tr *http.Transport

	mu    sync.Mutex
	conns int
}

func newClient(env emu.Env, maxConns int) *client {
	c := &client{}
	c.tr = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			conn, err := env.Dial(ctx, httpPort)
			if err == nil {
				c.mu.Lock()
				c.conns++
				c.mu.Unlock()
			}
			return conn, err
		},
		MaxConnsPerHost:     maxConns,
		MaxIdleConnsPerHost: maxConns,
		DisableCompression:  true,
	}
	c.Client = &http.Client{Transport: c.tr}
	return c
}

func (c *client) opened() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns
}

// get fetches url and returns the body's length.
func (c *client) get(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.Copy(io.Discard, resp.Body)
}
