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
}

// Server serves toxiproxy's HTTP API and the proxies it makes. It is an
// http.Handler: Start serves it on Config.Listen; a caller may serve it
// on a listener of its own instead. Close stops every proxy.
type Server struct {
	cfg Config
	mux *http.ServeMux

	mu      sync.Mutex // guards proxies, the proxies' settings and toxics, hs and closed
	proxies map[string]*proxyState
	closed  bool
	hs      *http.Server
	ln      net.Listener

	nextToxic atomic.Uint64 // toxic ids and versions
	nextConn  atomic.Uint64
}

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
	s := &Server{cfg: cfg, mux: http.NewServeMux(), proxies: map[string]*proxyState{}}
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
// connection, and returns once they are gone. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.hs != nil {
		s.hs.Close()
	}
	for name, px := range s.proxies {
		px.stop()
		delete(s.proxies, name)
	}
	return nil
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
		s.cfg.Logf("%s %s: 403: a browser's request (User-Agent %q) is refused", r.Method, r.URL.Path, r.UserAgent())
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
	ae := asAPIError(err)
	s.cfg.Logf("%s %s: %d %s", r.Method, r.URL.Path, ae.Status, ae.Message)
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
