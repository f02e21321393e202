package workloads

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/netemu/netemu/emu"
)

// The HTTP workloads' server and client.

const httpPort = 80

// web is how an HTTP workload's server and client talk: the protocol
// and, for a secure one, both sides' TLS configurations.
type web struct {
	proto          Proto
	server, client *tls.Config // nil for h1
	dns            bool        // the client looks the server's name up first
}

// newWeb sets up protocol p (with TLS version v, resuming sessions if
// resume) on env; see tlsConfigs.
func newWeb(env emu.Env, p Proto, v TLSVersion, resume bool) (web, error) {
	p, v = protoDefaults(p, v)
	w := web{proto: p}
	if !p.secure() {
		return w, nil
	}
	var err error
	w.server, w.client, err = tlsConfigs(env, v, resume)
	return w, err
}

// scheme is the URL scheme the client asks for: https for h1s, whose
// TLS net/http makes; http for h1, and for h2, whose TLS the workload
// makes itself (see h2.go).
func (w web) scheme() string {
	if w.proto == H1S || w.proto == H3 {
		return "https"
	}
	return "http"
}

// protocols is the HTTP versions both sides offer: HTTP/1.1 alone, or
// HTTP/2 alone, spoken over the TLS connections of h2.go.
func (w web) protocols() *http.Protocols {
	p := new(http.Protocols)
	if w.proto == H2 {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	return p
}

// server runs an HTTP server on the env's server side until stop is
// called. Responses carry a Date from the run's clock, so that virtual
// runs send the same bytes every time.
type server struct {
	srv  *http.Server
	h3   *h3Server  // h3 only; then srv is nil
	dns  *dnsServer // nil without DNS
	done chan struct{}
}

func startServer(env emu.Env, web web, h http.Handler) (*server, error) {
	if web.proto == H3 {
		return startH3(env, web, h)
	}
	ln, err := env.Listen(httpPort)
	if err != nil {
		return nil, err
	}
	if web.proto == H2 {
		ln = h2Listener{ln, env, web.server}
	}
	s := &server{done: make(chan struct{})}
	if web.dns {
		if s.dns, err = startDNS(env); err != nil {
			ln.Close()
			return nil, err
		}
	}
	s.srv = &http.Server{
		Handler:   withHeaders(env, h),
		Protocols: web.protocols(),
	}
	if web.proto == H1S {
		s.srv.TLSConfig = web.server
	}
	if web.proto == H2 {
		s.srv.HTTP2 = h2ServerConfig()
	}
	env.Go(func() {
		defer close(s.done)
		if web.proto == H1S {
			s.srv.ServeTLS(ln, "", "")
		} else {
			s.srv.Serve(ln)
		}
	})
	return s, nil
}

// withHeaders sets the headers every response has: a Date from the run's
// clock, and the content's type.
func withHeaders(env emu.Env, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", env.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/octet-stream")
		h.ServeHTTP(w, r)
	})
}

// startH3 serves h over HTTP/3 (h3.go).
func startH3(env emu.Env, web web, h http.Handler) (*server, error) {
	if onVirtualClock(env) {
		return nil, ErrH3VirtualClock
	}
	s := &server{}
	if web.dns {
		var err error
		if s.dns, err = startDNS(env); err != nil {
			return nil, err
		}
	}
	var err error
	if s.h3, err = startH3Server(env, web.server, withHeaders(env, h)); err != nil {
		if s.dns != nil {
			s.dns.stop()
		}
		return nil, err
	}
	return s, nil
}

func (s *server) stop() {
	if s.h3 != nil {
		s.h3.stop()
	} else {
		s.srv.Close()
		<-s.done
	}
	if s.dns != nil {
		s.dns.stop()
	}
}

// turns lets goroutines that act at one instant take their turns in a
// fixed order: turn i begins once turn i-1 has ended. HTTP/2 needs it for
// determinism: a page's requests all leave at one instant, one goroutine
// each, and the server runs a handler goroutine per stream, so without
// turns they would race for the connection and put their frames on it in
// a different order on every run. Turns keep the order a single-threaded
// browser and server would have: requests in page order, each response's
// frames after the previous one's.
type turns struct {
	ended []chan struct{}
	once  []sync.Once
}

func newTurns(n int) *turns {
	t := &turns{ended: make([]chan struct{}, n), once: make([]sync.Once, n)}
	for i := range t.ended {
		t.ended[i] = make(chan struct{})
	}
	return t
}

// wait waits until turn i may begin, or ctx ends.
func (t *turns) wait(ctx context.Context, i int) {
	if i > 0 {
		select {
		case <-t.ended[i-1]:
		case <-ctx.Done():
		}
	}
}

// end ends turn i; ending it again does nothing.
func (t *turns) end(i int) { t.once[i].Do(func() { close(t.ended[i]) }) }

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
// them. Over h2 it opens one connection and multiplexes every request
// on it, as a browser does.
type client struct {
	*http.Client
	tr    *http.Transport
	h3    *h3Client  // h3 only; then tr is nil
	watch *stopwatch // nil unless timings are recorded
	dns   *resolver  // nil without DNS

	mu    sync.Mutex
	conns int
}

func newClient(env emu.Env, web web, maxConns int) *client {
	c := &client{}
	if web.proto == H2 {
		maxConns = 1
	}
	c.tr = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if c.dns != nil {
				if err := c.lookup(ctx); err != nil {
					return nil, err
				}
			}
			done := traceConnect(ctx)
			conn, err := env.Dial(ctx, httpPort)
			done(err)
			if err != nil {
				return nil, err
			}
			c.mu.Lock()
			c.conns++
			c.mu.Unlock()
			c.noteConn(ctx, conn.LocalAddr())
			if web.proto == H2 {
				return dialH2(ctx, conn, env, web.client)
			}
			return conn, nil
		},
		MaxConnsPerHost:     maxConns,
		MaxIdleConnsPerHost: maxConns,
		DisableCompression:  true,
		Protocols:           web.protocols(),
	}
	if web.proto == H1S {
		c.tr.TLSClientConfig = web.client
	}
	c.Client = &http.Client{Transport: c.tr}
	if web.dns {
		c.dns = newResolver(env)
	}
	if web.proto == H3 {
		c.tr = nil
		before := func(ctx context.Context) error {
			if c.dns != nil {
				return c.lookup(ctx)
			}
			return nil
		}
		c.h3 = newH3Client(env, web.client, before, func(ctx context.Context, local net.Addr) {
			c.mu.Lock()
			c.conns++
			c.mu.Unlock()
			c.noteConn(ctx, local)
		})
		c.Client = &http.Client{Transport: c.h3.tr}
	}
	return c
}

// noteConn notes a new connection at local, dialed for ctx's request.
func (c *client) noteConn(ctx context.Context, local net.Addr) {
	if c.watch != nil {
		c.watch.opened(local)
		c.watch.dialed(ctx, local)
	}
}

// closeIdle closes the connections that carry no request.
func (c *client) closeIdle() {
	if c.h3 != nil {
		c.h3.tr.CloseIdleConnections()
		return
	}
	c.tr.CloseIdleConnections()
}

// close closes every connection, for the end of a run.
func (c *client) close() {
	if c.h3 != nil {
		c.h3.close()
		return
	}
	c.tr.CloseIdleConnections()
}

// lookup resolves the server's name before a connection, reporting the
// lookup to ctx's trace unless the name was known.
func (c *client) lookup(ctx context.Context) error {
	if c.dns.cached(serverName) {
		return nil
	}
	done := traceDNS(ctx, serverName)
	addr, err := c.dns.resolve(ctx, serverName)
	if err == nil && addr != emu.ServerAddr {
		err = fmt.Errorf("DNS: %s is at %v; the server is at %v", serverName, addr, emu.ServerAddr)
	}
	done(addr, err)
	return err
}

func (c *client) opened() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns
}

// timed makes the client record its requests' timings from start.
func (c *client) timed(env emu.Env, start time.Time) {
	c.watch = newStopwatch(env, start)
}

// timings returns the recorded timings; nil unless timed.
func (c *client) timings() []ResourceTiming {
	if c.watch == nil {
		return nil
	}
	return c.watch.timings()
}

// get fetches path and returns the body's length.
func (c *client) get(ctx context.Context, web web, path string) (int64, error) {
	url := web.scheme() + "://" + serverName + path
	done := func() {}
	if c.watch != nil {
		ctx, done = c.watch.request(ctx, path)
	}
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
	n, err := io.Copy(io.Discard, resp.Body)
	done()
	return n, err
}
