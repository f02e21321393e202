package web

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/netemu/netemu/emu"
)

// httpPort is the server's TCP port.
const httpPort = 80

// A File is one resource a Site serves: Size bytes of a fixed pattern at
// Path.
type File struct {
	Path string
	Size int
}

// A Site is one run's web: the files a server host serves over a
// protocol, and, over TLS, both sides' configurations. Serve starts its
// server and Client makes a client of it.
type Site struct {
	env   emu.Env
	cfg   Config // with defaults
	proto Protocol
	files []File
	index map[string]int // a file's path → its place in files

	server, client *tls.Config // nil without TLS

	// pages holds the turns of a page being fetched at once over a
	// protocol whose requests take turns; nil otherwise (see GetAll).
	pages atomic.Pointer[page]
}

// NewSite sets up c on env, serving files; see Config.
func NewSite(env emu.Env, c Config, files []File) (*Site, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.WithDefaults()
	s := &Site{env: env, cfg: c, proto: c.Proto.Protocol(), files: files, index: make(map[string]int, len(files))}
	for i, f := range files {
		s.index[f.Path] = i
	}
	if c.Proto.Secure() {
		var err error
		if s.server, s.client, err = tlsConfigs(env, c.TLS, c.Resume); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Server is a Site's server, running until Stop.
type Server struct {
	stop func()
	dns  *dnsServer // nil without DNS
}

// Serve starts the site's server on the env's server host: its DNS
// server first if the site has DNS, then the protocol's. Responses carry
// a Date from the run's clock, so that virtual runs send the same bytes
// every time.
func (s *Site) Serve() (*Server, error) {
	srv := &Server{}
	if s.cfg.DNS {
		var err error
		if srv.dns, err = startDNS(s.env); err != nil {
			return nil, err
		}
	}
	var err error
	if srv.stop, err = s.proto.serve(s.env, s.server, withHeaders(s.env, s.handler())); err != nil {
		if srv.dns != nil {
			srv.dns.stop()
		}
		return nil, err
	}
	return srv, nil
}

// Stop stops the server and waits for its goroutines.
func (s *Server) Stop() {
	s.stop()
	if s.dns != nil {
		s.dns.stop()
	}
}

// handler serves the site's files; a page's responses take their turns
// (see GetAll).
func (s *Site) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, ok := s.index[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if p := s.pages.Load(); p != nil {
			// The turn ends when the stream does: once its last frame
			// is written (see endWhenClosed).
			p.serving.wait(r.Context(), i)
			endWhenClosed(w, func() { p.serving.end(i) })
		}
		blob(w, s.files[i].Size)
	})
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

// serveTCP serves srv on the server's httpPort, through wrap if not nil,
// in a goroutine started with env.Go; over TLS (srv.TLSConfig) net/http
// makes the handshakes. stop closes the server and waits for it.
func serveTCP(env emu.Env, srv *http.Server, wrap func(net.Listener) net.Listener) (stop func(), err error) {
	ln, err := env.Listen(httpPort)
	if err != nil {
		return nil, err
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	done := make(chan struct{})
	env.Go(func() {
		defer close(done)
		if srv.TLSConfig != nil {
			srv.ServeTLS(ln, "", "")
		} else {
			srv.Serve(ln)
		}
	})
	return func() {
		srv.Close()
		<-done
	}, nil
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

// page is the turns of a page fetched at once: its requests are sent,
// and its responses served, in file order.
type page struct{ sending, serving *turns }

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
