//go:build linux

package kernel

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/pcap"
	"github.com/netemu/netemu/tcpstack"
)

// Interoperation of netemu's TCP (package tcp) with Linux's: an emulated
// host on one side of the link, a kernel namespace behind a TUN device on
// the other, in both roles. Every byte must arrive intact in both
// directions, on a clean link and through loss, reordering, duplication
// and corruption; a half-close must carry the reply after the request's
// end; and a reset must reach the reader as ECONNRESET. No assertion is
// about time: every wait is only bounded, so that a stuck connection fails
// rather than hangs.

// interopWait bounds each exchange but the impaired link's transfers.
const interopWait = 60 * time.Second

// interopLinks are the links the exchanges run on. wait bounds the
// transfer: longer through the impairments, where a transfer with the
// race detector on a busy machine takes tens of seconds. The sizes: 1 MiB
// each way is eight times the clean link's bandwidth-delay product, so
// the windows grow past 64 KiB (scaled) and the link stays full; 512 KiB
// each way through 5 % of each impairment meets about 35 of each per
// direction. Four times that, as before, took 53 s of the suite.
var interopLinks = []struct {
	name     string
	cfg      link.Config
	transfer int64 // bytes each way
	wait     time.Duration
	impaired bool
}{
	{"clean", link.Config{Delay: 10 * time.Millisecond, Rate: 50e6, Seed: 1}, 1 << 20, interopWait, false},
	{"impaired", link.Config{Delay: 10 * time.Millisecond, Rate: 50e6, Seed: 2,
		Loss:      link.RandomLoss(0.05, 0),
		Reorder:   link.Chance{P: 0.05},
		Duplicate: link.Chance{P: 0.05},
		Corrupt:   link.Chance{P: 0.05},
	}, 512 << 10, 2 * time.Minute, true},
}

// interopRoles put netemu's TCP on either side.
var interopRoles = []struct {
	name         string
	kernelClient bool
}{
	{"netemu-dials-kernel", false},
	{"kernel-dials-netemu", true},
}

// conn is what both kinds of connection offer.
type conn interface {
	net.Conn
	CloseWrite() error
	SetLinger(sec int) error
}

// pair returns the dialing and the accepting side of a new connection on
// port, with ctx's deadline on both.
func (m *mixed) pair(ctx context.Context, port uint16) (client, server conn, err error) {
	type accepted struct {
		c   conn
		err error
	}
	ch := make(chan accepted, 1)
	if m.kernelDir == link.AtoB { // the kernel dials the host
		ln, err := m.host.Listen(port)
		if err != nil {
			return nil, nil, err
		}
		defer ln.Close()
		stop := context.AfterFunc(ctx, func() { ln.Close() })
		defer stop()
		go func() {
			c, err := ln.AcceptTCP()
			if err != nil {
				ch <- accepted{nil, err}
				return
			}
			ch <- accepted{c, nil}
		}()
		c, err := m.dial(ctx, port)
		if err != nil {
			ln.Close()
			if a := <-ch; a.c != nil {
				a.c.Close()
			}
			return nil, nil, fmt.Errorf("kernel dial: %w", err)
		}
		client = c
	} else { // the host dials the kernel
		ln, err := m.listen(port)
		if err != nil {
			return nil, nil, err
		}
		defer ln.Close()
		stop := context.AfterFunc(ctx, func() { ln.Close() })
		defer stop()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				ch <- accepted{nil, err}
				return
			}
			m.track(c)
			ch <- accepted{c.(*net.TCPConn), nil}
		}()
		c, err := m.host.Dial(ctx, netip.AddrPortFrom(m.kernelAddr, port))
		if err != nil {
			ln.Close()
			if a := <-ch; a.c != nil {
				a.c.Close()
			}
			return nil, nil, fmt.Errorf("netemu dial: %w", err)
		}
		client = c
	}
	a := <-ch
	if a.err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("accept: %w", a.err)
	}
	server = a.c
	if dl, ok := ctx.Deadline(); ok {
		client.SetDeadline(dl)
		server.SetDeadline(dl)
	}
	return client, server, nil
}

// capture records what crosses the link in memory, and writes it to the
// test's artifact directory if the test fails: the packets as each side
// sent them (sent.pcap) and as the far end received them (delivered.pcap).
// It returns the count of IP fragments sent, per direction.
func capture(t *testing.T, l *link.Link) *[2]atomic.Uint64 {
	var fragments [2]atomic.Uint64
	var sentBuf, deliveredBuf bytes.Buffer
	sent, err := pcap.NewWriter(&sentBuf)
	if err != nil {
		t.Fatal(err)
	}
	delivered, err := pcap.NewWriter(&deliveredBuf)
	if err != nil {
		t.Fatal(err)
	}
	l.Observe(func(e link.Event) {
		switch e.Kind {
		case link.EventSend:
			sent.Packet(e.Time, e.Packet)
			if len(e.Packet) >= 8 && binary.BigEndian.Uint16(e.Packet[6:8])&0x3fff != 0 { // MF, or an offset
				fragments[e.Dir].Add(1)
			}
		case link.EventDeliver:
			delivered.Packet(e.Time, e.Packet)
		}
	})
	t.Cleanup(func() {
		l.Observe(nil)
		if !t.Failed() {
			return
		}
		dir := t.ArtifactDir()
		for name, b := range map[string]*bytes.Buffer{"sent.pcap": &sentBuf, "delivered.pcap": &deliveredBuf} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
				t.Log(err)
				continue
			}
			t.Logf("the link's packets: %s", p)
		}
	})
	return &fragments
}

// snmp reads the namespace's counters of /proc/net/snmp, keyed as
// "Ip:ReasmOKs".
func (m *mixed) snmp() (map[string]int, error) {
	var b []byte
	err := m.ns.do(func() error {
		var err error
		b, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	})
	if err != nil {
		return nil, err
	}
	c := map[string]int{}
	names := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if names[f[0]] == nil {
			names[f[0]] = f
			continue
		}
		for i, v := range f[1:] {
			if n, err := strconv.Atoi(v); err == nil && i+1 < len(names[f[0]]) {
				c[f[0]+names[f[0]][i+1]] = n
			}
		}
	}
	return c, nil
}

func TestInterop(t *testing.T) {
	needRoot(t)
	for _, lk := range interopLinks {
		for _, role := range interopRoles {
			t.Run(lk.name+"/"+role.name, func(t *testing.T) {
				m, err := newMixed(lk.cfg, tcpstack.TCPConfig{Impl: tcpstack.Netemu}, role.kernelClient, 7)
				if err != nil {
					t.Fatal(err)
				}
				inode := fmt.Sprintf("net:[%d]", m.ns.inode())
				t.Cleanup(func() {
					m.close()
					// Only this process can hold the namespace: it is
					// unnamed and its descriptor never leaves. A holder
					// elsewhere has a newer namespace that reuses the freed
					// inode number.
					self := fmt.Sprintf("/proc/%d/", os.Getpid())
					for _, h := range namespaceHolders(t, map[string]bool{inode: true}) {
						if strings.HasPrefix(h, self) {
							t.Errorf("after close, the namespace is still held by %s", h)
						}
					}
					if _, err := net.InterfaceByName(devName); err == nil {
						t.Errorf("a %s device exists in the test's own namespace", devName)
					}
				})
				fragments := capture(t, m.link)
				t.Run("transfer", func(t *testing.T) {
					interopTransfer(t, m, 80, lk.transfer, lk.wait)
				})
				t.Run("half-close", func(t *testing.T) {
					interopHalfClose(t, m, 81)
				})
				if !lk.impaired {
					// A lost RST is never sent again: on a lossy link the
					// reader would wait for its deadline.
					t.Run("reset", func(t *testing.T) {
						interopReset(t, m, 82)
					})
				}
				// Linux sends TCP with path-MTU discovery: every segment
				// fits the MTU, and no IP fragment crosses the link.
				hostFrags, kernelFrags := fragments[1-m.kernelDir].Load(), fragments[m.kernelDir].Load()
				t.Run("fits-mtu", func(t *testing.T) {
					if hostFrags != 0 || kernelFrags != 0 {
						t.Errorf("IP fragments crossed the link: %d from netemu's TCP, %d from the kernel's; want none (segments within the %d-byte MTU)", hostFrags, kernelFrags, m.link.Config().MTU)
					}
				})
				st := m.link.Stats()
				t.Logf("link a>b %d packets, b>a %d; dropped %d (lost %d), reordered %d, duplicated %d, corrupted %d; TUN write errors %d",
					st[link.AtoB].SentPackets, st[link.BtoA].SentPackets,
					st[0].Drops.Total()+st[1].Drops.Total(), st[0].Drops[link.DropLoss]+st[1].Drops[link.DropLoss],
					st[0].Reordered+st[1].Reordered, st[0].Duplicated+st[1].Duplicated, st[0].Corrupted+st[1].Corrupted,
					m.writeErrors.Load())
				snmp, err := m.snmp()
				if err != nil {
					t.Log(err)
				}
				t.Logf("IP fragments sent: %d by netemu's TCP, %d by the kernel's; the kernel reassembled %d fragments into %d packets (%d failures); "+
					"%d segments failed its TCP checksum, the link corrupted %d packets towards it",
					hostFrags, kernelFrags, snmp["Ip:ReasmReqds"], snmp["Ip:ReasmOKs"], snmp["Ip:ReasmFails"],
					snmp["Tcp:InCsumErrors"], st[1-m.kernelDir].Corrupted)
				if lk.impaired {
					// The impairments did act, in both directions.
					for _, d := range []link.Dir{link.AtoB, link.BtoA} {
						s := st[d]
						if s.Drops[link.DropLoss] == 0 || s.Reordered == 0 || s.Duplicated == 0 || s.Corrupted == 0 {
							t.Errorf("direction %v: lost %d, reordered %d, duplicated %d, corrupted %d; want each impairment at work",
								d, s.Drops[link.DropLoss], s.Reordered, s.Duplicated, s.Corrupted)
						}
					}
				}
			})
		}
	}
}

// interopTransfer sends size random bytes each way at once: each side
// writes its stream and half-closes, while reading the other's to the
// end. Both streams must arrive whole.
func interopTransfer(t *testing.T, m *mixed, port uint16, size int64, wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	client, server, err := m.pair(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	defer server.Close()
	start := time.Now()
	type result struct {
		who            string
		sent, got      [sha256.Size]byte
		nSent, nGot    int64
		writeErr, rErr error
		readDone       time.Duration
	}
	run := func(who string, c conn, seed uint64, ch chan<- result) {
		r := result{who: who}
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			h := sha256.New()
			r.nSent, r.writeErr = writeRandom(c, size, seed, h)
			h.Sum(r.sent[:0])
			if r.writeErr == nil {
				r.writeErr = c.CloseWrite()
			}
		}()
		h := sha256.New()
		r.nGot, r.rErr = io.Copy(h, c)
		h.Sum(r.got[:0])
		r.readDone = time.Since(start)
		<-wrote
		ch <- r
	}
	ch := make(chan result, 2)
	go run("client", client, 1, ch)
	go run("server", server, 2, ch)
	res := map[string]result{}
	for range 2 {
		r := <-ch
		res[r.who] = r
		if r.writeErr != nil {
			t.Errorf("%s: wrote %d of %d bytes, then %v", r.who, r.nSent, size, r.writeErr)
		}
		if r.rErr != nil {
			t.Errorf("%s: read %d of %d bytes, then %v", r.who, r.nGot, size, r.rErr)
		}
	}
	for _, d := range []struct{ from, to string }{{"client", "server"}, {"server", "client"}} {
		s, r := res[d.from], res[d.to]
		if r.nGot != size || r.got != s.sent {
			t.Errorf("%s to %s: %d bytes with SHA-256 %x arrived; %d bytes with %x were sent", d.from, d.to, r.nGot, r.got[:8], s.nSent, s.sent[:8])
		} else {
			t.Logf("%s to %s: %d bytes intact in %v", d.from, d.to, size, r.readDone.Round(time.Millisecond))
		}
	}
}

// writeRandom writes n bytes drawn from a generator seeded with seed to
// w and to h.
func writeRandom(w io.Writer, n int64, seed uint64, h io.Writer) (int64, error) {
	rng := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 'n', 'e', 't', 'e', 'm', 'u'})
	buf := make([]byte, 32<<10)
	var done int64
	for done < n {
		b := buf[:min(int64(len(buf)), n-done)]
		rng.Read(b)
		h.Write(b)
		m, err := w.Write(b)
		done += int64(m)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// interopHalfClose: the client sends a request and half-closes; the
// server reads it to the end of the stream, and only then replies and
// closes; the client reads the reply to the end.
func interopHalfClose(t *testing.T, m *mixed, port uint16) {
	ctx, cancel := context.WithTimeout(context.Background(), interopWait)
	defer cancel()
	client, server, err := m.pair(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	defer server.Close()
	request, reply := []byte("the request, then the end of the stream"), []byte("the reply, sent after the request's end")
	served := make(chan error, 1)
	go func() {
		got, err := io.ReadAll(server)
		switch {
		case err != nil:
			served <- fmt.Errorf("server: read %q, then %w", got, err)
			return
		case !bytes.Equal(got, request):
			served <- fmt.Errorf("server: read %q up to the end of the stream; want %q", got, request)
			return
		}
		if _, err := server.Write(reply); err != nil {
			served <- fmt.Errorf("server: reply after the client's half-close: %w", err)
			return
		}
		served <- server.Close()
	}()
	if _, err := client.Write(request); err != nil {
		t.Fatalf("client: write: %v", err)
	}
	if err := client.CloseWrite(); err != nil {
		t.Fatalf("client: CloseWrite: %v", err)
	}
	got, err := io.ReadAll(client)
	if err != nil {
		t.Errorf("client: read %q, then %v; want the reply and the end of the stream", got, err)
	} else if !bytes.Equal(got, reply) {
		t.Errorf("client: read %q up to the end of the stream; want %q", got, reply)
	}
	if err := <-served; err != nil {
		t.Error(err)
	}
}

// interopReset: once the client has read the server's greeting, the
// server closes with SO_LINGER 0, which sends a RST; the client's next
// read fails with ECONNRESET.
func interopReset(t *testing.T, m *mixed, port uint16) {
	ctx, cancel := context.WithTimeout(context.Background(), interopWait)
	defer cancel()
	client, server, err := m.pair(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	defer server.Close()
	hello := []byte("hello")
	if _, err := server.Write(hello); err != nil {
		t.Fatalf("server: write: %v", err)
	}
	got := make([]byte, len(hello))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatalf("client: read the greeting: %v", err)
	}
	if err := server.SetLinger(0); err != nil {
		t.Fatalf("server: SetLinger(0): %v", err)
	}
	if err := server.Close(); err != nil {
		t.Fatalf("server: Close: %v", err)
	}
	n, err := client.Read(got)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("client: read after the server's reset = %d bytes, %v; want ECONNRESET", n, err)
	}
}
