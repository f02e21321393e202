package web

import (
	"crypto/tls"
	"net/http"

	"github.com/netemu/netemu/emu"
)

// h1s is HTTP/1.1 over TLS, whose TLS net/http makes on both sides.
type h1s struct{}

func (h1s) Name() Proto               { return H1S }
func (h1s) TLSVersions() []TLSVersion { return tlsVersions }
func (h1s) Resumes() bool             { return true }
func (h1s) WallClock() string         { return "" }
func (h1s) multiplexed() bool         { return false }
func (h1s) inTurns() bool             { return false }

// Handshake: TCP's round trip, then TLS's.
func (h1s) Handshake(v TLSVersion, resumed bool) float64 { return 1 + tlsRoundTrips(v, resumed) }
func (h1s) Rounds(n, _, conns int) int                   { return ceilDiv(n, conns) }

func (h1s) serve(env emu.Env, cfg *tls.Config, h http.Handler) (func(), error) {
	return serveTCP(env, &http.Server{Handler: h, Protocols: http1(), TLSConfig: cfg}, nil)
}

func (h1s) transport(env emu.Env, cfg *tls.Config, d dialer, maxConns int) transport {
	return tcpTransport(&http.Transport{DialContext: d.dialTCP, Protocols: http1(), TLSClientConfig: cfg}, maxConns, "https")
}
