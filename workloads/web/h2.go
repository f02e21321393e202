package web

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/netemu/netemu/emu"
)

// HTTP/2 over TLS, made deterministic.
//
// net/http's HTTP/2 runs a goroutine per stream on the server and per
// request on the client, and flushes its frames whenever its write queue
// runs dry. At one instant of the virtual clock those goroutines race,
// so where one TLS record ends and the next begins, and whether a write
// reaches the TCP stack before or after the stack has finished with the
// segment that prompted it, would change from run to run. So h2 makes
// its own TLS connections (with ALPN "h2", as a browser's) and hands
// net/http a connection that batches: every write of one instant goes to
// TLS as one write once the run has settled (batchConn). Over it both
// sides speak HTTP/2 with prior knowledge, which on the wire is the same
// as HTTP/2 chosen by ALPN: the ALPN exchange happened in the handshake.
// The page's requests and responses also take turns (see turns), a
// response's turn ending once its stream is closed (endWhenClosed), and
// the server opens its connection with no WINDOW_UPDATE (h2ServerConfig).
type h2 struct{}

func (h2) Name() Proto               { return H2 }
func (h2) TLSVersions() []TLSVersion { return tlsVersions }
func (h2) Resumes() bool             { return true }
func (h2) WallClock() string         { return "" }
func (h2) multiplexed() bool         { return true }
func (h2) inTurns() bool             { return true }

// Handshake: TCP's round trip, then TLS's.
func (h2) Handshake(v TLSVersion, resumed bool) float64 { return 1 + tlsRoundTrips(v, resumed) }

// Rounds: the rounds of the one connection's congestion window.
func (h2) Rounds(_, total, _ int) int { return slowStartRounds(total, initialWindow, mss) }

// TCP's congestion window starts at initialWindow segments (RFC 6928;
// Linux's and gVisor's) of mss bytes of payload: Ethernet's 1500-byte MTU
// less 40 bytes of IPv4 and TCP headers and 12 of timestamps.
const (
	initialWindow = 10
	mss           = 1448
)

func (h2) serve(env emu.Env, cfg *tls.Config, h http.Handler) (func(), error) {
	srv := &http.Server{Handler: h, Protocols: unencryptedHTTP2(), HTTP2: h2ServerConfig()}
	return serveTCP(env, srv, func(ln net.Listener) net.Listener { return h2Listener{ln, env, cfg} })
}

// transport opens one connection: every request goes on a stream of it.
func (h2) transport(env emu.Env, cfg *tls.Config, d dialer, _ int) transport {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.dialTCP(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return dialH2(ctx, conn, env, cfg)
	}
	return tcpTransport(&http.Transport{DialContext: dial, Protocols: unencryptedHTTP2()}, 1, "http")
}

// unencryptedHTTP2 is the protocol set of HTTP/2 with prior knowledge,
// spoken over h2's own TLS connections.
func unencryptedHTTP2() *http.Protocols {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return p
}

const alpnH2 = "h2"

// withALPN returns a copy of cfg offering h2 alone.
func withALPN(cfg *tls.Config) *tls.Config {
	cfg = cfg.Clone()
	cfg.NextProtos = []string{alpnH2}
	return cfg
}

// dialH2 makes the client's TLS handshake on conn, checks that the server
// chose h2, and returns the connection net/http's HTTP/2 is to use.
func dialH2(ctx context.Context, conn net.Conn, env emu.Env, cfg *tls.Config) (net.Conn, error) {
	tc := tls.Client(conn, withALPN(cfg))
	done := traceTLS(ctx)
	err := tc.HandshakeContext(ctx)
	done(tc.ConnectionState(), err)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != alpnH2 {
		tc.Close()
		return nil, fmt.Errorf("TLS: the server chose protocol %q; want %q", p, alpnH2)
	}
	return newBatchConn(tc, env), nil
}

// h2Listener hands out the server's side of dialH2's connections: TLS
// offering h2 alone, batched. The handshake happens on first use, in the
// connection's own goroutine.
type h2Listener struct {
	net.Listener
	env emu.Env
	cfg *tls.Config
}

func (l h2Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newBatchConn(tls.Server(c, withALPN(l.cfg)), l.env), nil
}

// batchConn passes the writes made at one instant to its connection as
// one write, once the run has settled (env.Go): the TLS records and TCP
// segments they make then depend on what was written, not on which
// goroutine got there first. Write returns at once; an error of the
// connection's comes back from a later Write or from Close. Close writes
// what is pending first. On the real clock env.Go is a go statement and
// a batch is whatever accumulated before that goroutine ran.
type batchConn struct {
	net.Conn
	env emu.Env

	wmu sync.Mutex // held while writing to Conn, so batches keep their order

	mu      sync.Mutex
	pending []byte
	queued  bool  // a flush is scheduled
	err     error // the first write error
}

func newBatchConn(c net.Conn, env emu.Env) *batchConn { return &batchConn{Conn: c, env: env} }

func (c *batchConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	c.pending = append(c.pending, b...)
	if !c.queued {
		c.queued = true
		c.env.Go(c.flush)
	}
	return len(b), nil
}

// flush writes what is pending.
func (c *batchConn) flush() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	b := c.pending
	c.pending, c.queued = nil, false
	failed := c.err != nil
	c.mu.Unlock()
	if len(b) == 0 || failed {
		return
	}
	if _, err := c.Conn.Write(b); err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
}

// Close writes what is pending, then closes the connection.
func (c *batchConn) Close() error {
	c.flush()
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if cerr := c.Conn.Close(); err == nil {
		err = cerr
	}
	return err
}

// endWhenClosed calls end once the server's HTTP/2 stream of w is
// closed: its last frame (the DATA frame ending it) has been written.
// The request's context is no mark of that: net/http cancels it as the
// handler returns, before the handler's buffered headers and body go to
// the connection, so a turn that ended with the context would let the
// next handler's frames race this one's (HEADERS of later streams ahead
// of this stream's DATA, in an order that changes from run to run). The
// close notification comes when net/http closes the stream, once the
// frame with END_STREAM is written.
func endWhenClosed(w http.ResponseWriter, end func()) {
	//lint:ignore SA1019 CloseNotify is HTTP/2's one signal that a stream's last frame is written.
	closed := w.(http.CloseNotifier).CloseNotify()
	go func() {
		<-closed
		end()
	}()
}

// h2ServerConfig is the server's HTTP/2 configuration: net/http's
// defaults, but a connection's receive window left at HTTP/2's initial
// 65,535 bytes (the workloads upload nothing). With a larger one the
// server opens its connection with a WINDOW_UPDATE that it queues while
// the flush of its SETTINGS is in flight, and whether that frame or the
// acknowledgement of the client's SETTINGS goes first is decided by a
// select between two ready channels in the server's loop (the flush
// done, the client's SETTINGS read): a different order on some runs.
func h2ServerConfig() *http.HTTP2Config {
	return &http.HTTP2Config{MaxReceiveBufferPerConnection: 65535}
}
