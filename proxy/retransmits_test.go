package proxy

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
)

// Flags of a test segment.
const (
	fFIN = 0x01
	fSYN = 0x02
	fRST = 0x04
	fACK = 0x10
)

// packet is an IPv4 packet holding a TCP segment from port src to port
// dst with payload bytes of data.
func packet(src, dst uint16, seq, ack uint32, flags byte, payload int) []byte {
	b := make([]byte, 40+payload)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
	b[9] = 6
	t := b[20:]
	binary.BigEndian.PutUint16(t[0:2], src)
	binary.BigEndian.PutUint16(t[2:4], dst)
	binary.BigEndian.PutUint32(t[4:8], seq)
	binary.BigEndian.PutUint32(t[8:12], ack)
	t[12] = 5 << 4
	t[13] = flags
	return b
}

// TestLinkCount feeds linkCount the segments of connections and checks
// what it counts as sent again, whose it is, and when it forgets a
// connection.
func TestLinkCount(t *testing.T) {
	var c linkCount
	const cp, sp = 40000, 80
	k := flowKey{cp, sp}
	// up is a segment from the client host, down one from the server
	// host; send offers it to the link, deliver hands it to the far end.
	send := func(dir link.Dir, pkt []byte) { c.observe(link.Event{Kind: link.EventSend, Dir: dir, Packet: pkt}) }
	deliver := func(dir link.Dir, pkt []byte) { c.observe(link.Event{Kind: link.EventDeliver, Dir: dir, Packet: pkt}) }
	up := func(seq, ack uint32, flags byte, n int) []byte { return packet(cp, sp, seq, ack, flags, n) }
	down := func(seq, ack uint32, flags byte, n int) []byte { return packet(sp, cp, seq, ack, flags, n) }
	want := func(step string, all, mine uint64, s *session) {
		t.Helper()
		if c.total() != all || s.retransmits.Load() != mine {
			t.Fatalf("%s: %d in all, %d the session's; want %d and %d", step, c.total(), s.retransmits.Load(), all, mine)
		}
	}

	// The handshake, its SYN and SYN-ACK each sent twice: counted
	// before the session claims the connection, then its own.
	send(link.AtoB, up(1000, 0, fSYN, 0))
	send(link.AtoB, up(1000, 0, fSYN, 0))
	send(link.BtoA, down(5000, 1001, fSYN|fACK, 0))
	send(link.BtoA, down(5000, 1001, fSYN|fACK, 0))
	s := &session{}
	want("handshake", 2, 0, s)
	c.claim(k, s)
	want("claimed", 2, 2, s)

	// Data: sent again in full, or ending where it did, counts; a
	// segment that reaches beyond what was sent does not, nor do pure
	// ACKs and a FIN alone sent again.
	send(link.AtoB, up(1001, 5001, fACK, 100))
	send(link.AtoB, up(1001, 5001, fACK, 100))
	send(link.AtoB, up(1051, 5001, fACK, 100))
	send(link.BtoA, down(5001, 1151, fACK, 1000))
	send(link.BtoA, down(5501, 1151, fACK, 500))
	send(link.AtoB, up(1151, 6001, fACK, 0))
	send(link.AtoB, up(1151, 6001, fACK, 0))
	send(link.AtoB, up(1151, 6001, fFIN|fACK, 0))
	send(link.AtoB, up(1151, 6001, fFIN|fACK, 0))
	want("data", 4, 4, s)

	// Once the record is filed, what is sent again is the link's only.
	c.release(s)
	send(link.BtoA, down(5001, 1152, fACK, 1000))
	want("released", 5, 4, s)

	// The same ports with the other server port are another connection.
	send(link.AtoB, packet(cp, sp+1, 9000, 0, fSYN, 0))
	send(link.AtoB, packet(cp, sp+1, 9001, 0, fACK, 10))
	send(link.AtoB, packet(cp, sp+1, 9001, 0, fACK, 10))
	want("another server port", 6, 4, s)
	if len(c.flows) != 2 {
		t.Fatalf("%d connections kept; want 2", len(c.flows))
	}

	// Each FIN acknowledged: the connection is over and forgotten.
	deliver(link.BtoA, down(6001, 1152, fACK, 0))
	send(link.BtoA, down(6001, 1152, fFIN|fACK, 0))
	if len(c.flows) != 2 {
		t.Fatalf("forgotten before the server's FIN is acknowledged")
	}
	deliver(link.AtoB, up(1152, 6002, fACK, 0))
	if c.flows[k] != nil || len(c.flows) != 1 {
		t.Fatalf("%d connections kept, ours among them %v; want it forgotten", len(c.flows), c.flows[k] != nil)
	}

	// A reset delivered ends a connection too.
	deliver(link.BtoA, packet(sp+1, cp, 0, 9011, fRST|fACK, 0))
	if len(c.flows) != 0 {
		t.Fatalf("%d connections kept after a reset; want none", len(c.flows))
	}

	// The next connection on the same ports starts from its own SYN,
	// whatever its sequence numbers are next to the last one's.
	send(link.AtoB, up(500, 0, fSYN, 0))
	send(link.BtoA, down(100, 501, fSYN|fACK, 0))
	s2 := &session{}
	c.claim(k, s2)
	send(link.AtoB, up(501, 101, fACK, 100))
	send(link.BtoA, down(101, 601, fACK, 100))
	want("the next connection", 6, 0, s2)
	send(link.AtoB, up(501, 101, fACK, 100))
	want("the next connection sending again", 7, 1, s2)
	if s.retransmits.Load() != 4 {
		t.Errorf("the last connection's session has %d; want 4 still", s.retransmits.Load())
	}
}

// After connections through a lossy link have ended, the proxy's count
// of them has forgotten every one: its memory follows the connections
// open. (The client closes first, as in TestProxyRetransmitTotalsAgree,
// so that no data is outstanding behind a FIN.)
func TestLinkCountForgets(t *testing.T) {
	n, err := emu.New(emu.Config{Link: link.Config{Delay: 5 * time.Millisecond, Loss: link.Loss{P: 0.05}}, Clock: emu.Real, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write(make([]byte, 20<<10))
				io.Copy(io.Discard, c) // until the client closes
			}()
		}
	}()
	p, err := New(n, Config{Forwards: []Forward{{Listen: "127.0.0.1:0", Upstream: ln.Addr().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const conns = 20
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			c, err := net.Dial("tcp4", p.Addrs()[0].String())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(time.Minute))
			if _, err := io.ReadFull(c, make([]byte, 20<<10)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// Progress, not a deadline: the last FINs may be lost and sent
	// again, each after a longer timeout. What is left: connections kept
	// and records not yet filed.
	kept := func() int {
		p.count.mu.Lock()
		defer p.count.mu.Unlock()
		return len(p.count.flows) + conns - len(p.Records())
	}
	last, since := kept(), time.Now()
	for last > 0 {
		time.Sleep(20 * time.Millisecond)
		if k := kept(); k < last {
			last, since = k, time.Now()
		} else if time.Since(since) > 30*time.Second {
			t.Fatalf("%d connections kept or records not filed, of %d, after the transfers ended (%d records filed)", k, conns, len(p.Records()))
		}
	}
	if tot := p.Totals(); tot.Conns != conns || tot.LinkRetransmits < tot.Retransmits {
		t.Errorf("totals %+v; want %d connections and the link's retransmits at least the records'", tot, conns)
	}
}
