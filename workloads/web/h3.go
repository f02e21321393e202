package web

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"

	"github.com/netemu/netemu/emu"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// h3 is HTTP/3 over QUIC (quic-go), on the hosts' UDP sockets:
// quic.Transport over the env's net.PacketConn, TLS 1.3 with the run's
// seeded certificate, one connection carrying every request.
type h3 struct{}

func (h3) Name() Proto               { return H3 }
func (h3) TLSVersions() []TLSVersion { return []TLSVersion{TLS13} } // QUIC's handshake is TLS 1.3's
func (h3) Resumes() bool             { return false }
func (h3) multiplexed() bool         { return true }
func (h3) inTurns() bool             { return false }

// WallClock: quic-go reads the wall clock itself (its internal monotime
// and Go's timers), which no setting replaces; on a discrete-event clock
// its RTT estimate and timers would be wrong and no two runs would agree.
func (h3) WallClock() string {
	return "h3 runs on the real clock only: quic-go reads the wall clock itself"
}

// Handshake: QUIC's handshake carries TLS's, in one round trip.
func (h3) Handshake(TLSVersion, bool) float64 { return 1 }

// Rounds: the rounds of the one connection's congestion window.
func (h3) Rounds(_, total, _ int) int { return slowStartRounds(total, quicInitialWindow, quicPayload) }

// quic-go's congestion controller starts with a window of 32 packets of
// 1280 bytes (RFC 9002 allows up to ten of 1200 or 14,720 bytes;
// quic-go's choice is larger); a packet carries some 1250 bytes of a
// stream.
const (
	quicInitialWindow = 32
	quicPayload       = 1250
)

const h3Port = 443

func (h3) serve(env emu.Env, cfg *tls.Config, h http.Handler) (func(), error) {
	pc, err := env.ListenPacket(h3Port)
	if err != nil {
		return nil, err
	}
	tr := &quic.Transport{Conn: pc}
	srv := &http3.Server{Handler: h}
	ln, err := tr.ListenEarly(http3.ConfigureTLSConfig(cfg), &quic.Config{})
	if err != nil {
		pc.Close()
		return nil, err
	}
	go srv.ServeListener(ln)
	return func() {
		srv.Close()
		ln.Close()
		tr.Close()
		pc.Close()
	}, nil
}

// transport is one QUIC transport on a client UDP socket, opened by the
// first dial, dialing the server's h3Port.
func (h3) transport(env emu.Env, cfg *tls.Config, d dialer, _ int) transport {
	var (
		mu  sync.Mutex
		qtr *quic.Transport
		pc  net.PacketConn
		to  net.Addr
	)
	tr := &http3.Transport{
		TLSClientConfig: cfg,
		QUICConfig:      &quic.Config{},
		Dial: func(ctx context.Context, _ string, tlsCfg *tls.Config, qcfg *quic.Config) (*quic.Conn, error) {
			if err := d.lookup(ctx); err != nil {
				return nil, err
			}
			mu.Lock()
			if qtr == nil {
				c, addr, err := env.DialPacket(ctx, h3Port)
				if err != nil {
					mu.Unlock()
					return nil, err
				}
				pc, to, qtr = c, addr, &quic.Transport{Conn: c}
			}
			q, addr := qtr, to
			mu.Unlock()
			// The handshake is QUIC's and TLS's at once: the trace shows
			// it as the connect phase.
			done := traceConnect(ctx)
			qc, err := q.Dial(ctx, addr, tlsCfg, qcfg)
			done(err)
			if err != nil {
				return nil, err
			}
			d.opened(ctx, qc.LocalAddr())
			return qc, nil
		},
	}
	return transport{
		rt:        tr,
		scheme:    "https",
		closeIdle: tr.CloseIdleConnections,
		close: func() {
			tr.Close()
			mu.Lock()
			defer mu.Unlock()
			if qtr != nil {
				qtr.Close()
				pc.Close()
			}
		},
	}
}
