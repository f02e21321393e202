package web

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"

	"github.com/netemu/netemu/emu"
)

// H2C is HTTP/2 over TCP without TLS, by prior knowledge (RFC 9113,
// section 3.3), as services speak it inside a network: h2's one
// multiplexed connection, batched writes and turns (h2.go), without TLS's
// round trips.
const H2C Proto = "h2c"

type h2c struct{}

func (h2c) Name() Proto                        { return H2C }
func (h2c) TLSVersions() []TLSVersion          { return nil }
func (h2c) Resumes() bool                      { return false }
func (h2c) WallClock() string                  { return "" }
func (h2c) multiplexed() bool                  { return true }
func (h2c) inTurns() bool                      { return true }
func (h2c) Handshake(TLSVersion, bool) float64 { return 1 } // TCP's
func (h2c) Rounds(_, total, _ int) int         { return slowStartRounds(total, initialWindow, mss) }

func (h2c) serve(env emu.Env, _ *tls.Config, h http.Handler) (func(), error) {
	srv := &http.Server{Handler: h, Protocols: unencryptedHTTP2(), HTTP2: h2ServerConfig()}
	return serveTCP(env, srv, func(ln net.Listener) net.Listener { return batchListener{ln, env} })
}

// transport opens one connection: every request goes on a stream of it.
func (h2c) transport(env emu.Env, _ *tls.Config, d dialer, _ int) transport {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.dialTCP(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newBatchConn(conn, env), nil
	}
	return tcpTransport(&http.Transport{DialContext: dial, Protocols: unencryptedHTTP2()}, 1, "http")
}

// batchListener hands out the server's side of h2c's connections,
// batched.
type batchListener struct {
	net.Listener
	env emu.Env
}

func (l batchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newBatchConn(c, l.env), nil
}
