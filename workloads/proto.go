package workloads

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"flag"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
)

// Proto is the protocol an HTTP workload speaks.
type Proto string

// The HTTP workloads' protocols.
const (
	H1  Proto = "h1"  // HTTP/1.1 over TCP
	H1S Proto = "h1s" // HTTP/1.1 over TLS
	H2  Proto = "h2"  // HTTP/2 over TLS: one connection, streams multiplexed, chosen by ALPN
	H3  Proto = "h3"  // HTTP/3 over QUIC (TLS 1.3 inside): one connection, real clock only (h3.go)
)

// Protos lists the protocols in the order help names them.
var Protos = []Proto{H1, H1S, H2, H3}

// secure reports whether p runs over TLS.
func (p Proto) secure() bool { return p == H1S || p == H2 || p == H3 }

// TLSVersion is the TLS version of a secure protocol: "1.2" or "1.3".
type TLSVersion string

// TLS versions.
const (
	TLS12 TLSVersion = "1.2"
	TLS13 TLSVersion = "1.3"
)

// DefaultTLS is the TLS version when none is given.
const DefaultTLS = TLS13

func (v TLSVersion) id() uint16 {
	if v == TLS12 {
		return tls.VersionTLS12
	}
	return tls.VersionTLS13
}

// protoDefaults fills an HTTP workload's protocol and TLS version: h1 and
// no TLS version when none is given, TLS 1.3 for a secure protocol. A
// TLS version without TLS is dropped, so that h1 with and without --tls
// compare equal.
func protoDefaults(p Proto, v TLSVersion) (Proto, TLSVersion) {
	if p == "" {
		p = H1
	}
	switch {
	case !p.secure():
		v = ""
	case v == "":
		v = DefaultTLS
	}
	return p, v
}

// validateProto reports an unknown protocol or TLS version.
func validateProto(name string, p Proto, v TLSVersion) error {
	switch p {
	case "", H1, H1S, H2, H3:
	default:
		return fmt.Errorf("%s: protocol %q is unknown; want h1, h1s, h2 or h3", name, p)
	}
	if p == H3 && v == TLS12 {
		return fmt.Errorf("%s: h3 runs TLS 1.3 only (QUIC's handshake is TLS 1.3's); want TLS 1.3", name)
	}
	switch v {
	case "", TLS12, TLS13:
	default:
		return fmt.Errorf("%s: TLS version %q is unknown; want 1.2 or 1.3", name, v)
	}
	return nil
}

// recorded is p as records write it: "" for h1, so that h1's records stay
// what they were.
func recorded(p Proto) Proto {
	if p == H1 {
		return ""
	}
	return p
}

// protoLabel names a protocol and its TLS version for a variant: "h2,
// TLS 1.3"; "" for plain h1, whose variant names stay what they were.
func protoLabel(p Proto, v TLSVersion) string {
	switch {
	case p == "" || p == H1:
		return ""
	case v == "":
		return string(p)
	}
	return string(p) + ", TLS " + string(v)
}

// handshakeRTTs is the round trips a new connection takes before its
// first request can leave: TCP's one, then TLS's: one for TLS 1.3, two
// for TLS 1.2, one for a resumed TLS 1.2 session (TLS 1.3 resumption
// saves the certificate, not a round trip, without early data).
func handshakeRTTs(p Proto, v TLSVersion, resumed bool) float64 {
	p, v = protoDefaults(p, v)
	switch {
	case !p.secure() || p == H3: // QUIC's handshake carries TLS's: one round trip
		return 1
	case v == TLS12 && !resumed:
		return 3
	}
	return 2
}

// protoFlags defines --proto and --tls, each one value or a
// comma-separated list, and returns the function that reads them as the
// pairs they expand to, protocols varying slowest. h1 takes no TLS
// version, so it appears once whatever --tls lists.
func protoFlags(fs *flag.FlagSet) func() ([][2]string, error) {
	var names []string
	for _, p := range Protos {
		names = append(names, string(p))
	}
	protos := listOf(fs, "proto", string(H1), "HTTP protocol: "+orList(names)+" (TLS: h1s, h2; QUIC: h3, with --clock real), or a list: h1,h2", names...)
	versions := listOf(fs, "tls", string(DefaultTLS), "TLS version of h1s and h2: 1.2 or 1.3, or a list: 1.2,1.3 (h3: 1.3)", string(TLS12), string(TLS13))
	return func() ([][2]string, error) {
		ps, err := protos()
		if err != nil {
			return nil, err
		}
		vs, err := versions()
		if err != nil {
			return nil, err
		}
		if isSet(fs, "tls") && !slices.ContainsFunc(ps, func(p string) bool { return Proto(p).secure() }) {
			return nil, fmt.Errorf("--tls %s: no protocol listed runs over TLS; add --proto h1s or h2", strings.Join(vs, ","))
		}
		var out [][2]string
		for _, p := range ps {
			if !Proto(p).secure() {
				out = append(out, [2]string{p, ""})
				continue
			}
			if Proto(p) == H3 {
				// QUIC speaks TLS 1.3 alone.
				if !slices.Contains(vs, string(TLS13)) {
					return nil, fmt.Errorf("--proto h3 --tls %s: h3 runs TLS 1.3 only; want --tls 1.3 (or a list with it)", strings.Join(vs, ","))
				}
				out = append(out, [2]string{p, string(TLS13)})
				continue
			}
			for _, v := range vs {
				out = append(out, [2]string{p, v})
			}
		}
		return out, nil
	}
}

// listOf defines a flag that takes one of values or a comma-separated
// list of them, each at most once.
func listOf(fs *flag.FlagSet, name, def, help string, values ...string) func() ([]string, error) {
	v := fs.String(name, def, help)
	return func() ([]string, error) {
		var out []string
		seen := map[string]bool{}
		for _, w := range strings.Split(*v, ",") {
			w = strings.TrimSpace(w)
			ok := false
			for _, a := range values {
				ok = ok || a == w
			}
			if !ok {
				return nil, fmt.Errorf("--%s %q: want %s, or a comma-separated list of them", name, w, orList(values))
			}
			if seen[w] {
				return nil, fmt.Errorf("--%s %q: %s is listed twice", name, *v, w)
			}
			seen[w] = true
			out = append(out, w)
		}
		return out, nil
	}
}

// The TLS of the HTTP workloads is deterministic on the virtual clock:
// every random byte either side draws comes from a generator seeded by
// the run's seed, the key exchange is X25519 alone (the default hybrid
// with ML-KEM draws from the process's own source), the certificate is an
// Ed25519 one (whose signatures are deterministic) derived from the seed,
// session tickets are sealed with keys derived from the seed, and both
// sides read the time from the run's clock. The standard library ignores
// a custom Rand for key generation unless GODEBUG cryptocustomrand=1 is
// set; this module's go.mod sets it for its programs and tests.

// serverName is the name the certificate is issued to.
const serverName = "server"

// derive returns 32 bytes for label from seed.
func derive(seed uint64, label string) [32]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seed)
	return sha256.Sum256(append(b[:], "netemu "+label...))
}

// seededReader is a random source for crypto/tls drawn from a seeded
// generator, safe for concurrent use. It answers a one-byte read without
// drawing: the standard library reads one extra byte with probability ½
// (randutil.MaybeReadByte) so that callers do not rely on its exact
// consumption, which would make every run draw differently.
type seededReader struct {
	mu sync.Mutex
	g  *rand.ChaCha8
}

func newSeededReader(seed uint64, label string) *seededReader {
	return &seededReader{g: rand.NewChaCha8(derive(seed, label))}
}

func (r *seededReader) Read(p []byte) (int, error) {
	if len(p) == 1 {
		p[0] = 0
		return 1, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.g.Read(p)
}

// tlsConfigs returns the server's and the client's TLS configurations of
// a run: version v only, a certificate for serverName derived from env's
// seed that the client trusts, the run's clock and seeded randomness.
// With resume, the server issues session tickets (sealed with a key
// derived from the seed) and the client keeps them to resume; without,
// neither does.
func tlsConfigs(env emu.Env, v TLSVersion, resume bool) (server, client *tls.Config, err error) {
	seed := env.Seed()
	keySeed := derive(seed, "server key")
	key := ed25519.NewKeyFromSeed(keySeed[:])
	serial := derive(seed, "serial")
	tmpl := &x509.Certificate{
		SerialNumber:          new(big.Int).SetBytes(serial[:16]),
		Subject:               pkix.Name{CommonName: serverName},
		DNSNames:              []string{serverName},
		NotBefore:             clock.Epoch.Add(-24 * time.Hour),
		NotAfter:              clock.Epoch.AddDate(200, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(newSeededReader(seed, "certificate"), tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("TLS certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("TLS certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	curves := []tls.CurveID{tls.X25519}
	server = &tls.Config{
		Certificates:           []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		MinVersion:             v.id(),
		MaxVersion:             v.id(),
		CurvePreferences:       curves,
		Rand:                   newSeededReader(seed, "tls server"),
		Time:                   env.Now,
		SessionTicketsDisabled: !resume,
	}
	if resume {
		server.SetSessionTicketKeys([][32]byte{derive(seed, "session ticket key")})
	}
	client = &tls.Config{
		ServerName:       serverName,
		RootCAs:          roots,
		MinVersion:       v.id(),
		MaxVersion:       v.id(),
		CurvePreferences: curves,
		Rand:             newSeededReader(seed, "tls client"),
		Time:             env.Now,
	}
	if resume {
		client.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	}
	return server, client, nil
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
