package workloads

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// HTTP/3 over QUIC (quic-go), on the hosts' UDP sockets: quic.Transport
// over the env's net.PacketConn, TLS 1.3 with the run's seeded
// certificate. quic-go reads the wall clock itself (its internal
// monotime and Go timers), which no setting replaces, so h3 runs on the
// real clock only: on the virtual clock its RTT estimate and timers would
// be wrong and no two runs would agree.

const h3Port = 443

// quic-go's congestion controller starts with a window of 32 packets of
// 1280 bytes (RFC 9002 allows up to ten of 1200 or 14,720 bytes;
// quic-go's choice is larger); a packet carries some 1250 bytes of a
// stream.
const (
	quicInitialWindow = 32
	quicPayload       = 1250
)

// quicRounds is the round trips one QUIC connection takes to deliver n
// bytes requested at once from a fresh start: slow start sends its
// initial window in the first, and doubles it each round after.
func quicRounds(n int) int {
	pkts := ceilDiv(n, quicPayload)
	rounds := 0
	for w := quicInitialWindow; pkts > 0; w *= 2 {
		pkts -= w
		rounds++
	}
	return max(rounds, 1)
}

// ErrH3VirtualClock is the error of an h3 run on the virtual clock.
var ErrH3VirtualClock = errors.New("h3 runs on the real clock only: quic-go reads the wall clock itself; add --clock real")

// RealClockOnly says why w cannot run on the virtual clock; "" if it can.
func RealClockOnly(w Workload) string {
	switch w := w.(type) {
	case Page:
		if w.Proto == H3 {
			return ErrH3VirtualClock.Error()
		}
	case KeepAlive:
		if w.Proto == H3 {
			return ErrH3VirtualClock.Error()
		}
	}
	return ""
}

// onVirtualClock reports whether env runs on a discrete-event clock.
func onVirtualClock(env emu.Env) bool {
	c, ok := env.(interface{ Clock() clock.Clock })
	if !ok {
		return false
	}
	_, seq := c.Clock().(clock.Sequential)
	return seq
}

// h3Server serves HTTP/3 on the server's UDP port h3Port.
type h3Server struct {
	srv *http3.Server
	tr  *quic.Transport
	pc  net.PacketConn
	ln  *quic.EarlyListener
}

func startH3Server(env emu.Env, cfg *tls.Config, h http.Handler) (*h3Server, error) {
	pc, err := env.ListenPacket(h3Port)
	if err != nil {
		return nil, err
	}
	s := &h3Server{pc: pc, tr: &quic.Transport{Conn: pc}, srv: &http3.Server{Handler: h}}
	s.ln, err = s.tr.ListenEarly(http3.ConfigureTLSConfig(cfg), &quic.Config{})
	if err != nil {
		pc.Close()
		return nil, err
	}
	go s.srv.ServeListener(s.ln)
	return s, nil
}

func (s *h3Server) stop() {
	s.srv.Close()
	s.ln.Close()
	s.tr.Close()
	s.pc.Close()
}

// h3Client is the client's side: one QUIC transport on a client UDP
// socket, dialing the server's h3Port.
type h3Client struct {
	tr *http3.Transport

	mu  sync.Mutex
	qtr *quic.Transport
	pc  net.PacketConn
	to  net.Addr
}

// newH3Client makes the client; before is called before each dial, and
// opened with each new connection's local address, both with the context
// of the request that dials.
func newH3Client(env emu.Env, cfg *tls.Config, before func(ctx context.Context) error, opened func(ctx context.Context, local net.Addr)) *h3Client {
	c := &h3Client{}
	c.tr = &http3.Transport{
		TLSClientConfig: cfg,
		QUICConfig:      &quic.Config{},
		Dial: func(ctx context.Context, _ string, tlsCfg *tls.Config, qcfg *quic.Config) (*quic.Conn, error) {
			if err := before(ctx); err != nil {
				return nil, err
			}
			c.mu.Lock()
			if c.qtr == nil {
				pc, to, err := env.DialPacket(ctx, h3Port)
				if err != nil {
					c.mu.Unlock()
					return nil, err
				}
				c.pc, c.to, c.qtr = pc, to, &quic.Transport{Conn: pc}
			}
			qtr, to := c.qtr, c.to
			c.mu.Unlock()
			// The handshake is QUIC's and TLS's at once: the trace shows
			// it as the connect phase.
			done := traceConnect(ctx)
			qc, err := qtr.Dial(ctx, to, tlsCfg, qcfg)
			done(err)
			if err != nil {
				return nil, err
			}
			opened(ctx, qc.LocalAddr())
			return qc, nil
		},
	}
	return c
}

func (c *h3Client) close() {
	c.tr.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.qtr != nil {
		c.qtr.Close()
		c.pc.Close()
	}
}
