package emutest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
)

// NewTransport returns an http.Transport whose connections the client
// host of env dials. The URL's port picks the server host's port (80 when
// the URL has none); its host name is not looked up, since the client
// host can reach only the server host: "http://server/" will do.
//
// The transport uses no proxy and its defaults otherwise (keep-alive on,
// two idle connections per host). Call CloseIdleConnections when done.
// Do not set http.Client.Timeout: it measures wall time; give requests a
// context from WithTimeout instead (inside a testing/synctest bubble,
// where wall time is the run's, set it freely).
//
// NewTransport panics if env is nil.
func NewTransport(env emu.Env) *http.Transport {
	if env == nil {
		panic("emutest.NewTransport: nil emu.Env; pass the network")
	}
	return &http.Transport{
		Proxy: nil, // never leave the emulated network
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			port, err := portOf(network, addr)
			if err != nil {
				return nil, err
			}
			c, err := env.Dial(ctx, port)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
	}
}

// portOf returns the port of a "host:port" address that http.Transport
// dials.
func portOf(network, addr string) (uint16, error) {
	if network != "tcp" && network != "tcp4" {
		return 0, fmt.Errorf("emutest: cannot dial %s %q: the emulated hosts speak TCP over IPv4", network, addr)
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("emutest: cannot dial %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 {
		return 0, fmt.Errorf("emutest: cannot dial %q: want a port from 1 to 65535", addr)
	}
	return uint16(port), nil
}

// HTTPClient returns an HTTP client over the network (see NewTransport)
// and closes its idle connections when the test ends.
func (n *Net) HTTPClient() *http.Client {
	tr := NewTransport(n)
	n.tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// HTTPServer serves h over HTTP/1.1 on the server host's port (0 means
// 80) until the test ends. For an idle timeout, start a Server yourself.
func (n *Net) HTTPServer(port uint16, h http.Handler) *Server {
	n.tb.Helper()
	s := &Server{Handler: h, Port: port}
	if err := s.Start(n); err != nil {
		n.tb.Fatalf("%v", err)
	}
	n.tb.Cleanup(func() { s.Close() })
	return s
}

// Server is an HTTP/1.1 server on the server host of a network. Set its
// fields, then call Start.
//
// Responses carry a Date header from the run's clock, so that a virtual
// run sends the same bytes every time.
type Server struct {
	// Handler serves requests. It is required.
	Handler http.Handler

	// Port is the server host's port; 0 means 80.
	Port uint16

	// IdleTimeout closes a keep-alive connection once it has been idle
	// this long, measured on the run's clock. 0 means never.
	// (http.Server.IdleTimeout measures wall time, which a virtual run
	// does not follow.)
	IdleTimeout time.Duration

	// Config, if set, is the http.Server to run; Start sets its Handler
	// and ConnState. Leave its timeouts zero: they measure wall time
	// (except inside a testing/synctest bubble, where that is the run's).
	Config *http.Server

	host    string // the host's name in URL; "" means "server"
	mu      sync.Mutex
	env     emu.Env
	clk     clock.Clock // the env's clock, if it offers one
	done    chan struct{}
	conns   int
	idle    map[net.Conn]func() // stops a connection's idle timer
	closed  bool
	sleeper sync.WaitGroup // idle timers without a clock
}

// Start listens on the server host of env and serves in the background
// until Close.
func (s *Server) Start(env emu.Env) error {
	switch {
	case env == nil:
		return errors.New("emutest: Server.Start needs the network; pass it as env")
	case s.Handler == nil:
		return errors.New("emutest: Server.Handler is nil; set the handler to serve")
	case s.IdleTimeout < 0:
		return fmt.Errorf("emutest: Server.IdleTimeout is %v; want 0 (never) or more", s.IdleTimeout)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env != nil {
		return errors.New("emutest: Server.Start called twice")
	}
	port := s.Port
	if port == 0 {
		port = 80
	}
	ln, err := env.Listen(port)
	if err != nil {
		return fmt.Errorf("emutest: Server.Start: %w", err)
	}
	s.env, s.Port = env, port
	if c, ok := env.(interface{ Clock() clock.Clock }); ok {
		s.clk = c.Clock()
	}
	if s.Config == nil {
		s.Config = &http.Server{}
	}
	h := s.Handler
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", env.Now().UTC().Format(http.TimeFormat))
		h.ServeHTTP(w, r)
	})
	s.Config.ConnState = s.connState
	s.idle = make(map[net.Conn]func())
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.Config.Serve(ln)
	}()
	return nil
}

// URL is the server's base URL, like "http://server:80", or
// "http://n2:80" for Host.HTTPServer on host n2.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	port := s.Port
	if port == 0 {
		port = 80
	}
	host := s.host
	if host == "" {
		host = "server"
	}
	return "http://" + host + ":" + strconv.Itoa(int(port))
}

// Conns returns how many connections the server has accepted.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Close stops the server at once, closing every connection, and waits
// for its goroutines. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.env == nil || s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for c, stop := range s.idle {
		stop()
		delete(s.idle, c)
	}
	s.mu.Unlock()
	err := s.Config.Close()
	<-s.done
	s.sleeper.Wait()
	return err
}

// connState counts connections and runs the idle timers.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == http.StateNew {
		s.conns++
	}
	if stop, ok := s.idle[c]; ok {
		stop()
		delete(s.idle, c)
	}
	if st == http.StateIdle && s.IdleTimeout > 0 && !s.closed {
		s.idle[c] = s.idleTimer(c)
	}
}

// idleTimer closes c after IdleTimeout of run time and returns the
// function that stops it. s.mu is held.
func (s *Server) idleTimer(c net.Conn) (stop func()) {
	if s.clk != nil {
		t := s.clk.AfterFunc(s.IdleTimeout, func() { c.Close() })
		return func() { t.Stop() }
	}
	// An env that does not expose its clock (the kernel backend): sleep
	// through env.Sleep.
	ctx, cancel := context.WithCancel(context.Background())
	s.sleeper.Add(1)
	go func() {
		defer s.sleeper.Done()
		if s.env.Sleep(ctx, s.IdleTimeout) == nil {
			c.Close()
		}
	}()
	return cancel
}
