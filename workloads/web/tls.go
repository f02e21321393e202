package web

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"math/big"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
)

// TLSVersion is the TLS version of a protocol over TLS: "1.2" or "1.3".
type TLSVersion string

// TLS versions.
const (
	TLS12 TLSVersion = "1.2"
	TLS13 TLSVersion = "1.3"
)

// DefaultTLS is the TLS version when none is given.
const DefaultTLS = TLS13

// tlsVersions lists the versions there are, in the order a list expands.
var tlsVersions = []TLSVersion{TLS12, TLS13}

func (v TLSVersion) id() uint16 {
	if v == TLS12 {
		return tls.VersionTLS12
	}
	return tls.VersionTLS13
}

// tlsRoundTrips is the round trips TLS's handshake takes over TCP: one
// for TLS 1.3, two for TLS 1.2, one for a resumed TLS 1.2 session (TLS
// 1.3 resumption saves the certificate, not a round trip, without early
// data).
func tlsRoundTrips(v TLSVersion, resumed bool) float64 {
	if v == TLS12 && !resumed {
		return 2
	}
	return 1
}

// The TLS of a Site is deterministic on the virtual clock: every random
// byte either side draws comes from a generator seeded by the run's seed,
// the key exchange is X25519 alone (the default hybrid with ML-KEM draws
// from the process's own source), the certificate is an Ed25519 one
// (whose signatures are deterministic) derived from the seed, session
// tickets are sealed with keys derived from the seed, and both sides read
// the time from the run's clock. The standard library ignores a custom
// Rand for key generation unless GODEBUG cryptocustomrand=1 is set; this
// module's go.mod sets it for its programs and tests.

// serverName is the name the certificate is issued to, and the one DNS
// knows.
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
