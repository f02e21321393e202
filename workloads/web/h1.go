package web

import (
	"crypto/tls"
	"net/http"

	"github.com/netemu/netemu/emu"
)

// h1 is HTTP/1.1 over TCP: a connection carries one request at a time.
type h1 struct{}

func (h1) Name() Proto                        { return H1 }
func (h1) TLSVersions() []TLSVersion          { return nil }
func (h1) Resumes() bool                      { return false }
func (h1) WallClock() string                  { return "" }
func (h1) multiplexed() bool                  { return false }
func (h1) inTurns() bool                      { return false }
func (h1) Handshake(TLSVersion, bool) float64 { return 1 } // TCP's
func (h1) Rounds(n, _, conns int) int         { return ceilDiv(n, conns) }

func (h1) serve(env emu.Env, _ *tls.Config, h http.Handler) (func(), error) {
	return serveTCP(env, &http.Server{Handler: h, Protocols: http1()}, nil)
}

func (h1) transport(env emu.Env, _ *tls.Config, d dialer, maxConns int) transport {
	return tcpTransport(&http.Transport{DialContext: d.dialTCP, Protocols: http1()}, maxConns, "http")
}

// http1 is the protocol set of HTTP/1.1 alone.
func http1() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	return p
}
