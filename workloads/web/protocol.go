package web

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/internal/english"
)

// protocols lists the protocols, in the order help names them. A new
// protocol is one file that implements Protocol, and one line here.
var protocols = []Protocol{
	h1{},
	h1s{},
	h2{},
	h2c{},
	h3{},
}

// Proto names a protocol: "h1", "h1s", "h2", "h3".
type Proto string

// The protocols' names.
const (
	H1  Proto = "h1"  // HTTP/1.1 over TCP (h1.go)
	H1S Proto = "h1s" // HTTP/1.1 over TLS (h1s.go)
	H2  Proto = "h2"  // HTTP/2 over TLS, chosen by ALPN (h2.go)
	H3  Proto = "h3"  // HTTP/3 over QUIC (h3.go)
)

// DefaultProto is the protocol when none is given. Variants and records
// leave it out.
const DefaultProto = H1

// A Protocol carries HTTP between an env's client and server hosts. Its
// exported methods are what callers model and choose by; the unexported
// ones are its two sides.
type Protocol interface {
	// Name is the protocol's name in flags, variants and records.
	Name() Proto
	// TLSVersions lists the TLS versions the protocol runs, in the order
	// a list of them expands; none for a protocol without TLS.
	TLSVersions() []TLSVersion
	// Resumes reports whether a fresh connection resumes an earlier
	// one's TLS session from its ticket.
	Resumes() bool
	// Handshake is the round trips a new connection takes before its
	// first request can leave, over TLS version v ("" without TLS), its
	// session resumed or not.
	Handshake(v TLSVersion, resumed bool) float64
	// Rounds is the round trips n requests for total bytes, issued at
	// once, take on connections already open, at most conns of them.
	Rounds(n, total, conns int) int
	// WallClock says why the protocol reads Go's time itself instead of
	// the run's clock: it runs only where the two are one (the real
	// clock, a synctest bubble). "" when it reads the run's clock alone.
	WallClock() string

	// multiplexed reports whether one connection carries every request
	// at once, each on a stream of its own.
	multiplexed() bool
	// inTurns reports whether requests issued at one instant take turns
	// in file order on both sides (see turns).
	inTurns() bool
	// serve serves h on env's server host until stop is called; cfg is
	// the server's TLS, nil without.
	serve(env emu.Env, cfg *tls.Config, h http.Handler) (stop func(), err error)
	// transport is the client's side, opening at most maxConns
	// connections, each through d; cfg is the client's TLS, nil without.
	transport(env emu.Env, cfg *tls.Config, d dialer, maxConns int) transport
}

// Protocols returns every protocol, in registry order.
func Protocols() []Protocol { return protocols }

// Names lists the protocols' names, in registry order.
func Names() []string {
	var out []string
	for _, p := range protocols {
		out = append(out, string(p.Name()))
	}
	return out
}

// Protocol returns the protocol named p, DefaultProto's for "", and nil
// for a name no protocol has (Config.Validate reports it).
func (p Proto) Protocol() Protocol {
	if p == "" {
		p = DefaultProto
	}
	for _, q := range protocols {
		if q.Name() == p {
			return q
		}
	}
	return nil
}

// Secure reports whether p runs over TLS.
func (p Proto) Secure() bool {
	q := p.Protocol()
	return q != nil && len(q.TLSVersions()) > 0
}

// Recorded is p as records and variants write it: "" for DefaultProto,
// whose records leave the protocol out.
func (p Proto) Recorded() Proto {
	if p == DefaultProto {
		return ""
	}
	return p
}

// Config chooses how a Site's server and client talk.
type Config struct {
	Proto Proto      // "" means DefaultProto
	TLS   TLSVersion // for a protocol over TLS; "" means DefaultTLS
	// Resume has the server issue session tickets and the client keep
	// them, so that a fresh connection after the first resumes.
	Resume bool
	// DNS has the client look the server's name up first, once (dns.go).
	DNS bool
}

// WithDefaults fills the protocol and the TLS version: DefaultProto when
// none is given, DefaultTLS for a protocol over TLS. A TLS version
// without TLS is dropped, so that h1 with and without one compare equal.
func (c Config) WithDefaults() Config {
	if c.Proto == "" {
		c.Proto = DefaultProto
	}
	switch {
	case !c.Proto.Secure():
		c.TLS = ""
	case c.TLS == "":
		c.TLS = DefaultTLS
	}
	return c
}

// Validate reports an unknown protocol or TLS version, or a TLS version
// the protocol does not run.
func (c Config) Validate() error {
	p := c.Proto.Protocol()
	if p == nil {
		return fmt.Errorf("protocol %q is unknown; want %s", c.Proto, english.Or(Names()...))
	}
	if !slices.Contains(tlsVersions, c.TLS) && c.TLS != "" {
		return fmt.Errorf("TLS version %q is unknown; want 1.2 or 1.3", c.TLS)
	}
	if vs := p.TLSVersions(); len(vs) > 0 && c.TLS != "" && !slices.Contains(vs, c.TLS) {
		return fmt.Errorf("%s runs TLS %s only; want TLS %s", p.Name(), versionList(vs), versionList(vs))
	}
	return nil
}

// Label names the protocol and its TLS version for a variant: "h2, TLS
// 1.3"; "" for DefaultProto, whose variants stay unnamed.
func (c Config) Label() string {
	c = c.WithDefaults()
	switch {
	case c.Proto == DefaultProto:
		return ""
	case c.TLS == "":
		return string(c.Proto)
	}
	return string(c.Proto) + ", TLS " + string(c.TLS)
}

// Handshake is the round trips a new connection of c takes before its
// first request can leave (see Protocol.Handshake).
func (c Config) Handshake(resumed bool) float64 {
	c = c.WithDefaults()
	return c.Proto.Protocol().Handshake(c.TLS, resumed)
}

// versionList joins TLS versions as "1.2 or 1.3".
func versionList(vs []TLSVersion) string {
	var words []string
	for _, v := range vs {
		words = append(words, string(v))
	}
	return english.Or(words...)
}

// ceilDiv is a ÷ b rounded up.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// slowStartRounds is the round trips one connection takes to deliver n
// bytes requested at once from a fresh start: its congestion window sends
// initial packets of payload bytes in the first, and doubles each round
// after.
func slowStartRounds(n, initial, payload int) int {
	pkts := ceilDiv(n, payload)
	rounds := 0
	for w := initial; pkts > 0; w *= 2 {
		pkts -= w
		rounds++
	}
	return max(rounds, 1)
}
