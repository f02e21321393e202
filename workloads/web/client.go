package web

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netemu/netemu/emu"
)

// Client fetches a Site's files over its protocol, with connections
// through the env's client host. It counts the connections it opens and
// the TLS sessions they resume, and records each request's timings once
// Time is called.
type Client struct {
	site     *Site
	tr       transport
	http     *http.Client
	maxConns int
	watch    *stopwatch // nil unless timings are recorded
	dns      *resolver  // nil without DNS

	mu      sync.Mutex
	conns   int
	resumed atomic.Int64
}

// transport is a protocol's client side.
type transport struct {
	rt        http.RoundTripper
	scheme    string // of the URLs it takes: https where it makes TLS itself
	closeIdle func() // closes the connections that carry no request
	close     func() // closes every connection
}

// tcpTransport completes tr for a protocol over TCP: at most maxConns
// connections, kept open when idle, no compression.
func tcpTransport(tr *http.Transport, maxConns int, scheme string) transport {
	tr.MaxConnsPerHost = maxConns
	tr.MaxIdleConnsPerHost = maxConns
	tr.DisableCompression = true
	return transport{rt: tr, scheme: scheme, closeIdle: tr.CloseIdleConnections, close: tr.CloseIdleConnections}
}

// dialer is the client's part in a protocol's dials: the lookup of the
// server's name before each, and the count and timing of each new
// connection.
type dialer struct {
	env emu.Env
	c   *Client
}

// lookup resolves the server's name before a dial, reporting the lookup
// to ctx's trace unless the name was known; without DNS it does nothing.
func (d dialer) lookup(ctx context.Context) error {
	r := d.c.dns
	if r == nil || r.cached(serverName) {
		return nil
	}
	done := traceDNS(ctx, serverName)
	addr, err := r.resolve(ctx, serverName)
	if err == nil && addr != emu.ServerAddr {
		err = fmt.Errorf("DNS: %s is at %v; the server is at %v", serverName, addr, emu.ServerAddr)
	}
	done(addr, err)
	return err
}

// opened counts a new connection at local, dialed for ctx's request.
func (d dialer) opened(ctx context.Context, local net.Addr) {
	c := d.c
	c.mu.Lock()
	c.conns++
	c.mu.Unlock()
	if c.watch != nil {
		c.watch.opened(local)
		c.watch.dialed(ctx, local)
	}
}

// dialTCP opens a TCP connection to the server's httpPort, reporting its
// connect to ctx's trace as net.Dialer does.
func (d dialer) dialTCP(ctx context.Context, _, _ string) (net.Conn, error) {
	if err := d.lookup(ctx); err != nil {
		return nil, err
	}
	done := traceConnect(ctx)
	conn, err := d.env.Dial(ctx, httpPort)
	done(err)
	if err != nil {
		return nil, err
	}
	d.opened(ctx, conn.LocalAddr())
	return conn, nil
}

// Client makes a client of the site that opens at most maxConns
// connections at once; a multiplexed protocol opens one.
func (s *Site) Client(maxConns int) *Client {
	c := &Client{site: s, maxConns: maxConns}
	if s.cfg.DNS {
		c.dns = newResolver(s.env)
	}
	cfg := s.client
	if cfg != nil {
		// Count the handshakes that resumed a session.
		cfg = cfg.Clone()
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if cs.DidResume {
				c.resumed.Add(1)
			}
			return nil
		}
	}
	c.tr = s.proto.transport(s.env, cfg, dialer{s.env, c}, maxConns)
	c.http = &http.Client{Transport: c.tr.rt}
	return c
}

// Conns is the connections the client opened.
func (c *Client) Conns() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns
}

// Resumed is the connections whose TLS session resumed.
func (c *Client) Resumed() int { return int(c.resumed.Load()) }

// CloseIdle closes the connections that carry no request.
func (c *Client) CloseIdle() { c.tr.closeIdle() }

// Close closes every connection, for the end of a run.
func (c *Client) Close() { c.tr.close() }

// Time makes the client record its requests' timings from start.
func (c *Client) Time(start time.Time) { c.watch = newStopwatch(c.site.env, start) }

// Timings returns the recorded timings; nil unless Time was called.
func (c *Client) Timings() []ResourceTiming {
	if c.watch == nil {
		return nil
	}
	return c.watch.timings()
}

// Get fetches the site's file i and returns the body's length.
func (c *Client) Get(ctx context.Context, i int) (int64, error) {
	path := c.site.files[i].Path
	url := c.tr.scheme + "://" + serverName + path
	done := func() {}
	if c.watch != nil {
		ctx, done = c.watch.request(ctx, path)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	done()
	return n, err
}

// GetAll fetches every file of the site at once, as a browser loads a
// page's resources, and returns the bytes received and the first error.
// Over a multiplexed protocol every request goes at once on a stream of
// the one connection; otherwise maxConns go at a time, a connection
// carrying one. Where the protocol takes turns, requests are sent and
// responses served in file order.
func (c *Client) GetAll(ctx context.Context) (int64, error) {
	n := len(c.site.files)
	workers := c.maxConns
	if c.site.proto.multiplexed() {
		workers = n
	}
	var p *page
	if c.site.proto.inTurns() {
		p = &page{sending: newTurns(n), serving: newTurns(n)}
		c.site.pages.Store(p)
		defer c.site.pages.Store(nil)
	}
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
		if next >= n || first != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	// The workers start one at a time (env.Go), so each opens its
	// connection in the same order on every run; afterwards whichever
	// worker finishes first takes the next file.
	for range min(workers, n) {
		wg.Add(1)
		c.site.env.Go(func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				rctx := ctx
				if c.watch != nil {
					rctx = c.watch.issued(rctx)
				}
				if p != nil {
					p.sending.wait(ctx, i)
					rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{WroteHeaders: func() { p.sending.end(i) }})
				}
				got, err := c.Get(rctx, i)
				if p != nil {
					p.sending.end(i)
				}
				mu.Lock()
				bytes += got
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return bytes, first
}
