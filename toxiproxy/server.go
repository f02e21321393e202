package toxiproxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
	"github.com/netemu/netemu/tcpstack"
)

// DefaultListen is the API's address when Config.Listen is empty:
// toxiproxy's port, on loopback.
const DefaultListen = "127.0.0.1:8474"

// Config configures a Server. The zero value serves on DefaultListen,
// with connections on an ideal base link: no delay, no rate limit, what
// a toxiproxy proxy is without toxics.
type Config struct {
	// Listen is the API's host:port; "" means DefaultListen.
	Listen string

	// Version is what GET /version answers; "" means "netemu".
	Version string

	// Link is every connection's link before its toxics (link.Config:
	// the zero value is no delay, no rate limit). Its Seed is not used:
	// each connection's link draws from Seed.
	Link link.Config

	// TCP is the emulated hosts' TCP (tcpstack.TCPConfig); an empty
	// Impl is netemu's (gVisor's can stop retransmitting a lossy
	// connection for good, docs/UPSTREAM.md), cubic unless set.
	TCP tcpstack.TCPConfig

	// Seed seeds every random choice: toxicity's rolls, the slicer's
	// sizes, and the links' impairments, per connection.
	Seed uint64

	// Logf, if set, receives one line for each request refused (bad
	// JSON, an unknown toxic type, ...) and each connection that fails.
	Logf func(format string, args ...any)

	// DialUpstream opens the connections to upstreams; nil means a
	// net.Dialer with a 10-second timeout.
	DialUpstream func(ctx context.Context, network, addr string) (net.Conn, error)

	// MaxConns bounds the connections open at once across the server's
	// proxies, each with a network of its own (about 100 KB idle, more
	// with data in flight); the next ones wait in the kernel's listen
	// backlog until one ends. 0 means DefaultMaxConns.
	MaxConns int
}

// DefaultMaxConns is Config.MaxConns's default: a few hundred MB of
// networks at the most, and far more connections than a test suite
// holds open.
const DefaultMaxConns = 1024

// Server serves toxiproxy's HTTP API and the proxies it makes. It is an
// http.Handler: Start serves it on Config.Listen; a caller may serve it
// on a listener of its own instead. Close stops every proxy.
//
// Server.mu is held for bookkeeping only, and for the syscalls on the
// proxies' own listening sockets (listen, close: local, immediate). What
// may wait on a network is never done under it: names are resolved
// before it is taken; connections are told of a change of toxics, and
// stopped proxies' connections reset and their networks closed, after
// it is released (later), the networks in the background with a bounded
// wait (end). So every request is answered whatever a network does.
type Server struct {
	cfg Config
	mux *http.ServeMux

	mu       sync.Mutex // guards proxies, the proxies' settings and toxics, byPort, ending, after, hs and closed
	proxies  map[string]*proxyState
	byPort   map[uint16]map[*run]struct{} // the listening proxies, by port: the check of loops
	ending   map[*run]struct{}            // stopped proxies whose connections have not all ended
	after    []func()                     // what waits for mu's release (later)
	closed   bool
	hs       *http.Server
	ln       net.Listener
	loops    proxy.LoopGuard // the proxies' listeners and upstream connections: loops cut at connect time
	closeNet func(n *emu.Net) error
	// closeWait bounds the wait for a stopped proxy's connections to end
	// before the log says which are stuck, and Close's wait.
	closeWait time.Duration

	nextToxic atomic.Uint64 // toxic ids and versions
	nextConn  atomic.Uint64
	reapplied atomic.Uint64 // toxics applied to connections, one by one: the cost of changes

	slots chan struct{} // one per open connection, Config.MaxConns of them (run.accept)
}

// CloseWait is how long Close waits for the connections of the proxies
// it stops to end (their networks to close) before it gives up on them
// and says which are stuck.
const CloseWait = 10 * time.Second

// New checks cfg and returns a Server that serves nothing yet.
func New(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Version == "" {
		cfg.Version = "netemu"
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if err := cfg.Link.Validate(); err != nil {
		return nil, fmt.Errorf("toxiproxy: the base link: %w", err)
	}
	if err := cfg.TCP.Validate(); err != nil {
		return nil, fmt.Errorf("toxiproxy: %w", err)
	}
	if cfg.MaxConns < 0 {
		return nil, fmt.Errorf("toxiproxy: MaxConns %d: want 0 (%d) or more", cfg.MaxConns, DefaultMaxConns)
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), proxies: map[string]*proxyState{}, byPort: map[uint16]map[*run]struct{}{},
		ending: map[*run]struct{}{}, closeNet: (*emu.Net).Close, closeWait: CloseWait, slots: make(chan struct{}, cfg.MaxConns)}
	s.routes()
	return s, nil
}

// Start listens on Config.Listen and serves the API there until Close.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("toxiproxy: %w", err)
	}
	// toxiproxy's timeouts.
	hs := &http.Server{Handler: s, ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second}
	s.mu.Lock()
	if s.closed || s.hs != nil {
		s.mu.Unlock()
		ln.Close()
		return errors.New("toxiproxy: the server is closed or started already")
	}
	s.hs, s.ln = hs, ln
	s.mu.Unlock()
	go hs.Serve(ln)
	return nil
}

// Addr is the API's address once Start has listened; nil before.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close stops the API, closes every proxy's listener and resets every
// connection, and returns once they are gone, or after 10 s at most:
// then the error says how many connections of which proxies are still
// closing (their networks are stuck). It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	hs := s.hs
	for name, px := range s.proxies {
		px.stop()
		delete(s.proxies, name)
	}
	s.unlock()
	if hs != nil {
		hs.Close()
	}
	return s.waitEnding(time.Now().Add(s.closeWait))
}

// waitEnding waits until the stopped proxies' connections have ended, or
// deadline; then the error names those left.
func (s *Server) waitEnding(deadline time.Time) error {
	s.mu.Lock()
	runs := make([]*run, 0, len(s.ending))
	for r := range s.ending {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	late := make(chan struct{})
	t := time.AfterFunc(time.Until(deadline), func() { close(late) })
	defer t.Stop()
	var stuck []string
	for _, r := range runs {
		select {
		case <-r.done:
			continue
		case <-late:
		}
		if n := r.open(); n > 0 {
			stuck = append(stuck, fmt.Sprintf("proxy %s: %d", proxy.Clip(r.px.name), n))
		}
	}
	if len(stuck) > 0 {
		err := fmt.Errorf("toxiproxy: connections still closing after %v, their networks stuck: %s", s.closeWait, strings.Join(stuck, ", "))
		s.cfg.Logf("%v", err)
		return err
	}
	return nil
}

// later has f run once Server.mu is released (unlock). Called with
// Server.mu held.
func (s *Server) later(f func()) { s.after = append(s.after, f) }

// unlock releases Server.mu, then runs what waited for it, in order.
func (s *Server) unlock() {
	after := s.after
	s.after = nil
	s.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// end resets the connections of r, a stopped proxy's run, and lets their
// networks close in the background; if they have not all ended within
// closeWait, the log says how many are stuck. Called without Server.mu.
func (s *Server) end(r *run) {
	warn := time.AfterFunc(s.closeWait, func() {
		s.cfg.Logf("proxy %s: %d connections still closing %v after the proxy stopped: their networks are stuck", proxy.Clip(r.px.name), r.open(), s.closeWait)
	})
	// Each connection is reset on its own goroutine: one whose network
	// is stuck holds up none of the others.
	r.each(func(c *conn) { go c.abort() })
	go func() {
		r.wg.Wait()
		warn.Stop()
		s.mu.Lock()
		delete(s.ending, r)
		s.mu.Unlock()
		close(r.done)
	}()
}

// apiError is toxiproxy's error body: {"error":"…","status":N}.
type apiError struct {
	Message string `json:"error"`
	Status  int    `json:"status"`
}

func (e *apiError) Error() string { return e.Message }

// toxiproxy's errors, word for word.
var (
	errBadBody       = &apiError{"bad request body", http.StatusBadRequest}
	errMissingField  = &apiError{"missing required field", http.StatusBadRequest}
	errProxyNotFound = &apiError{"proxy not found", http.StatusNotFound}
	errProxyExists   = &apiError{"proxy already exists", http.StatusConflict}
	errInvalidStream = &apiError{"stream was invalid, can be either upstream or downstream", http.StatusBadRequest}
	errInvalidType   = &apiError{"invalid toxic type", http.StatusBadRequest}
	errToxicExists   = &apiError{"toxic already exists", http.StatusConflict}
	errToxicNotFound = &apiError{"toxic not found", http.StatusNotFound}
)

// apiErr is base with err's text after it, as toxiproxy joins them.
func apiErr(base *apiError, err error) *apiError {
	return &apiError{base.Message + ": " + err.Error(), base.Status}
}

// clipped is ae with every long word of its message clipped
// (proxy.ClipWords): a value a client sent comes back as its first
// bytes and its length, not whole.
func clipped(ae *apiError) *apiError {
	return &apiError{proxy.ClipWords(ae.Message), ae.Status}
}

// asAPIError is err as the API answers it: other errors (a listen that
// fails) are 500s with their text.
func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return &apiError{err.Error(), http.StatusInternalServerError}
}

// A route is one path of the API and its handler per method.
type route struct {
	pattern string
	methods map[string]func(w http.ResponseWriter, r *http.Request) error
}

func (s *Server) routes() {
	for _, rt := range []route{
		{"/reset", map[string]func(http.ResponseWriter, *http.Request) error{"POST": s.reset}},
		{"/proxies", map[string]func(http.ResponseWriter, *http.Request) error{"GET": s.proxyIndex, "POST": s.proxyCreate}},
		{"/populate", map[string]func(http.ResponseWriter, *http.Request) error{"POST": s.populate}},
		{"/proxies/{proxy}", map[string]func(http.ResponseWriter, *http.Request) error{"GET": s.proxyShow, "POST": s.proxyUpdate, "PATCH": s.proxyUpdate, "DELETE": s.proxyDelete}},
		{"/proxies/{proxy}/toxics", map[string]func(http.ResponseWriter, *http.Request) error{"GET": s.toxicIndex, "POST": s.toxicCreate}},
		{"/proxies/{proxy}/toxics/{toxic}", map[string]func(http.ResponseWriter, *http.Request) error{"GET": s.toxicShow, "POST": s.toxicUpdate, "PATCH": s.toxicUpdate, "DELETE": s.toxicDelete}},
		{"/version", map[string]func(http.ResponseWriter, *http.Request) error{"GET": s.version}},
	} {
		s.mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			h := rt.methods[r.Method]
			if h == nil {
				// toxiproxy's router answers an empty 405.
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("X-Toxiproxy-Request-Id", requestID())
			if err := h(w, r); err != nil {
				s.fail(w, r, err)
			}
		})
	}
}

// ServeHTTP serves the API. Requests from browsers are refused, as
// toxiproxy refuses them, so that a web page cannot drive the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.UserAgent(), "Mozilla/") {
		s.cfg.Logf("%s %s: 403: a browser's request (User-Agent %q) is refused", r.Method, proxy.Clip(r.URL.Path), proxy.Clip(r.UserAgent()))
		http.Error(w, "User agent not allowed", http.StatusForbidden)
		return
	}
	// The body is read whole before a handler takes the server's lock:
	// a client that sends it slowly holds up its own request only.
	if r.Body != nil {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		switch {
		case err != nil:
			s.fail(w, r, apiErr(errBadBody, err))
			return
		case len(b) > maxBody:
			s.fail(w, r, apiErr(errBadBody, fmt.Errorf("over %d bytes", maxBody)))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	s.mux.ServeHTTP(w, r)
}

// maxBody bounds a request's body: a proxy list for /populate is
// kilobytes.
const maxBody = 1 << 20

// fail writes err as toxiproxy does, JSON in a text/plain body, and logs
// one line.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	ae := clipped(asAPIError(err))
	s.cfg.Logf("%s %s: %d %s", r.Method, proxy.Clip(r.URL.Path), ae.Status, ae.Message)
	b, _ := json.Marshal(ae)
	http.Error(w, string(b), ae.Status)
}

// writeJSON writes v, compact, without a final newline, as toxiproxy's
// successes are.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
	return nil
}

// decode reads the request's first JSON value into v, as toxiproxy's
// decoder does: unknown fields ignored, what follows the value too.
func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return apiErr(errBadBody, err)
	}
	return nil
}

// requestID is a request's X-Toxiproxy-Request-Id: 20 characters, as
// toxiproxy's are.
func requestID() string {
	var b [12]byte
	rand.Read(b[:])
	return strings.ToLower(base32.HexEncoding.EncodeToString(b[:])[:20])
}

// proxyDialer is Config.DialUpstream's default.
var proxyDialer = &net.Dialer{Timeout: 10 * time.Second}

// upstreamDial is the dial for the proxies' connections.
func (s *Server) upstreamDial() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if s.cfg.DialUpstream != nil {
		return s.cfg.DialUpstream
	}
	return proxyDialer.DialContext
}

var _ http.Handler = (*Server)(nil)
var _ proxy.Shaper = (*direction)(nil)
