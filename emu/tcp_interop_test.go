package emu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/race"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"go.uber.org/goleak"
)

// Interoperation and integrity of netemu's TCP (package tcp): against
// itself and against gVisor's TCP in either role, every byte must arrive
// intact, in both directions, through loss, reordering, duplication and
// corruption, over several connections at once.

// tcpPairs are the client and server implementations a test runs.
var tcpPairs = []struct {
	name           string
	client, server tcpstack.Impl
}{
	{"netemu-netemu", tcpstack.Netemu, tcpstack.Netemu},
	{"netemu-gvisor", tcpstack.Netemu, tcpstack.GVisor},
	{"gvisor-netemu", tcpstack.GVisor, tcpstack.Netemu},
}

// pairConfig is cfg with the client running client's TCP and the server
// server's.
func pairConfig(cfg Config, client, server tcpstack.Impl) Config {
	cfg.TCP.Impl = client
	s := cfg.TCP
	s.Impl = server
	cfg.ServerTCP = &s
	return cfg
}

// exchangeResult is what one request-response exchange saw.
type exchangeResult struct {
	upSent, upGot     [sha256.Size]byte
	downSent, downGot [sha256.Size]byte
	upN, downN        int64
}

// exchange runs conns connections at once on port; on each the client
// writes up seeded bytes and half-closes (CloseWrite), the server reads
// to the end of the stream, then writes down seeded bytes and closes; the
// client reads to the end. It returns each connection's hashes.
func exchange(t *testing.T, n *Net, port uint16, conns int, up, down int64) []exchangeResult {
	t.Helper()
	res := make([]exchangeResult, conns)
	err := n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Listen(port)
		if err != nil {
			return err
		}
		defer ln.Close()
		served := make(chan error, conns)
		// The server learns which connection it serves from the first
		// 8 bytes the client sends.
		n.Go(func() {
			for range conns {
				c, err := ln.Accept()
				if err != nil {
					served <- err
					return
				}
				n.Go(func() {
					defer c.Close()
					var idb [1]byte
					if _, err := io.ReadFull(c, idb[:]); err != nil {
						served <- fmt.Errorf("server: reading the connection's number: %w", err)
						return
					}
					r := &res[idb[0]]
					h := sha256.New()
					got, err := io.Copy(h, c)
					h.Sum(r.upGot[:0])
					if err != nil {
						served <- fmt.Errorf("server %d: read %d of %d bytes, then %w", idb[0], got, up, err)
						return
					}
					hd := sha256.New()
					if _, err := seededWriter(c, down, uint64(idb[0])+1000, hd); err != nil {
						served <- fmt.Errorf("server %d: write: %w", idb[0], err)
						return
					}
					hd.Sum(r.downSent[:0])
					r.upN = got
					served <- nil
				})
			}
		})
		done := make(chan error, conns)
		for i := range conns {
			n.Go(func() {
				c, err := n.Dial(ctx, port)
				if err != nil {
					done <- err
					return
				}
				defer c.Close()
				r := &res[i]
				if _, err := c.Write([]byte{byte(i)}); err != nil {
					done <- err
					return
				}
				h := sha256.New()
				if _, err := seededWriter(c, up, uint64(i), h); err != nil {
					done <- fmt.Errorf("client %d: write: %w", i, err)
					return
				}
				h.Sum(r.upSent[:0])
				if err := c.CloseWrite(); err != nil {
					done <- fmt.Errorf("client %d: CloseWrite: %w", i, err)
					return
				}
				hd := sha256.New()
				r.downN, err = io.Copy(hd, c)
				hd.Sum(r.downGot[:0])
				if err != nil {
					done <- fmt.Errorf("client %d: read %d bytes, then %w", i, r.downN, err)
					return
				}
				done <- nil
			})
		}
		var errs []error
		for range conns {
			errs = append(errs, <-done)
		}
		for range conns {
			errs = append(errs, <-served)
		}
		return errors.Join(errs...)
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkExchange fails the test unless every connection's bytes arrived
// whole in both directions.
func checkExchange(t *testing.T, res []exchangeResult, up, down int64) {
	t.Helper()
	for i, r := range res {
		if r.upN != up || r.upGot != r.upSent {
			t.Errorf("connection %d: the server read %d bytes, sha256 %x; want the client's %d bytes, sha256 %x", i, r.upN, r.upGot[:4], up, r.upSent[:4])
		}
		if r.downN != down || r.downGot != r.downSent {
			t.Errorf("connection %d: the client read %d bytes, sha256 %x; want the server's %d bytes, sha256 %x", i, r.downN, r.downGot[:4], down, r.downSent[:4])
		}
	}
}

// impairments are the link conditions the integrity tests run through.
func impairments() []struct {
	name string
	link link.Config
} {
	base := link.Config{Delay: 10 * time.Millisecond, Rate: 20e6, Qdisc: link.Qdisc{Limit: 60}}
	with := func(f func(*link.Config)) link.Config { c := base; f(&c); return c }
	return []struct {
		name string
		link link.Config
	}{
		{"clean", base},
		{"loss5", with(func(c *link.Config) { c.Loss = link.RandomLoss(0.05, 0) })},
		{"reorder", with(func(c *link.Config) { c.Reorder = link.Chance{P: 0.2} })},
		{"duplicate", with(func(c *link.Config) { c.Duplicate = link.Chance{P: 0.05} })},
		{"corrupt", with(func(c *link.Config) { c.Corrupt = link.Chance{P: 0.03} })},
		{"all", with(func(c *link.Config) {
			c.Loss = link.RandomLoss(0.05, 0)
			c.Reorder = link.Chance{P: 0.1}
			c.Duplicate = link.Chance{P: 0.03}
			c.Corrupt = link.Chance{P: 0.03}
		})},
	}
}

// TestTCPInteropIntegrity moves data both ways over three connections at
// once, netemu's TCP against itself and against gVisor's in either role,
// through each impairment; every byte must arrive, and the link's
// counters must show the impairment happened.
func TestTCPInteropIntegrity(t *testing.T) {
	defer goleak.VerifyNone(t)
	up, down := int64(150<<10), int64(600<<10)
	if race.Enabled {
		up, down = 40<<10, 200<<10
	}
	for _, p := range tcpPairs {
		for _, imp := range impairments() {
			t.Run(p.name+"/"+imp.name, func(t *testing.T) {
				n := newNet(t, pairConfig(Config{Link: imp.link, Seed: 7}, p.client, p.server))
				start0 := n.Now()
				res := exchange(t, n, 80, 3, up, down)
				checkExchange(t, res, up, down)
				st := n.Stats().Link
				a, b := st[link.AtoB], st[link.BtoA]
				var hit uint64
				switch imp.name {
				case "loss5":
					hit = a.Drops[link.DropLoss] + b.Drops[link.DropLoss]
				case "reorder":
					hit = a.Reordered + b.Reordered
				case "duplicate":
					hit = a.Duplicated + b.Duplicated
				case "corrupt", "all":
					hit = a.Corrupted + b.Corrupted
				default:
					hit = 1
				}
				t.Logf("virtual %v; a>b %d packets (%d lost, %d reordered, %d dup, %d corrupt); b>a %d packets (%d lost)", n.Now().Sub(start0), a.SentPackets, a.Drops[link.DropLoss], a.Reordered, a.Duplicated, a.Corrupted, b.SentPackets, b.Drops[link.DropLoss])
				if hit == 0 {
					t.Errorf("the link applied no %s to %d+%d packets", imp.name, a.SentPackets, b.SentPackets)
				}
				n.Close()
			})
		}
	}
}

// TestTCPInteropSizes moves transfers from empty to a few MiB, one
// connection each, clean link: small ones test the handshake and FIN
// paths, large ones window growth and the send buffer.
func TestTCPInteropSizes(t *testing.T) {
	defer goleak.VerifyNone(t)
	sizes := []int64{0, 1, 1447, 1448, 1449, 65535, 1 << 20, 4 << 20}
	if race.Enabled {
		sizes = sizes[:len(sizes)-1]
	}
	for _, p := range tcpPairs {
		for _, sz := range sizes {
			t.Run(fmt.Sprintf("%s/%d", p.name, sz), func(t *testing.T) {
				n := newNet(t, pairConfig(Config{Link: link.Config{Delay: 5 * time.Millisecond, Rate: 50e6, Qdisc: link.Qdisc{Limit: 100}}, Seed: 3}, p.client, p.server))
				res := exchange(t, n, 80, 1, sz/3, sz)
				checkExchange(t, res, sz/3, sz)
				n.Close()
			})
		}
	}
}

// TestTCPCloseUnreadResets: a Close with data left unread sends a reset
// (RFC 9293 section 3.10.4; Linux's tcp_close), which the peer's next read
// reports as ECONNRESET.
func TestTCPCloseUnreadResets(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, p := range tcpPairs {
		t.Run(p.name, func(t *testing.T) {
			n := newNet(t, pairConfig(Config{Link: link.Config{Delay: 5 * time.Millisecond}}, p.client, p.server))
			err := n.Run(context.Background(), func(ctx context.Context) error {
				ln, err := n.Listen(80)
				if err != nil {
					return err
				}
				defer ln.Close()
				closed := make(chan struct{})
				n.Go(func() {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					// Wait for the client's bytes, then close unread.
					n.Sleep(ctx, 100*time.Millisecond)
					c.Close()
					close(closed)
				})
				c, err := n.Dial(ctx, 80)
				if err != nil {
					return err
				}
				defer c.Close()
				if _, err := c.Write([]byte("never read")); err != nil {
					return err
				}
				<-closed
				_, err = c.Read(make([]byte, 10))
				if !errors.Is(err, syscall.ECONNRESET) {
					return fmt.Errorf("client read after the server closed with unread data: %v; want ECONNRESET", err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			n.Close()
		})
	}
}

// TestTCPLingerZeroResets: SetLinger(0) makes Close send a reset with
// data still queued (SO_LINGER 0), and the peer sees ECONNRESET instead of
// the data's end.
func TestTCPLingerZeroResets(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, p := range tcpPairs {
		t.Run(p.name, func(t *testing.T) {
			n := newNet(t, pairConfig(Config{Link: link.Config{Delay: 5 * time.Millisecond, Rate: 10e6}}, p.client, p.server))
			err := n.Run(context.Background(), func(ctx context.Context) error {
				ln, err := n.Listen(80)
				if err != nil {
					return err
				}
				defer ln.Close()
				n.Go(func() {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.(*tcpstack.Conn).SetLinger(0)
					c.Write(bytes.Repeat([]byte("x"), 100<<10))
					c.Close()
				})
				c, err := n.Dial(ctx, 80)
				if err != nil {
					return err
				}
				defer c.Close()
				got, err := io.Copy(io.Discard, c)
				if !errors.Is(err, syscall.ECONNRESET) {
					return fmt.Errorf("client read %d bytes, then %v; want ECONNRESET", got, err)
				}
				if got >= 100<<10 {
					return fmt.Errorf("client read all %d bytes; want the reset to cut the stream", got)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			n.Close()
		})
	}
}

// TestTCPRefused: a connect to a port nobody listens on is refused by a
// reset (RFC 9293 section 3.10.7.1).
func TestTCPRefused(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, p := range tcpPairs {
		t.Run(p.name, func(t *testing.T) {
			n := newNet(t, pairConfig(Config{Link: link.Config{Delay: 5 * time.Millisecond}}, p.client, p.server))
			err := n.Run(context.Background(), func(ctx context.Context) error {
				start := n.Now()
				_, err := n.Dial(ctx, 81)
				if !errors.Is(err, syscall.ECONNREFUSED) {
					return fmt.Errorf("dial to a closed port: %v; want ECONNREFUSED", err)
				}
				if d := n.Now().Sub(start); d != 10*time.Millisecond {
					return fmt.Errorf("refused after %v; want one round trip, 10ms", d)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			n.Close()
		})
	}
}

var _ net.Conn = (*tcpstack.Conn)(nil)
