package tcp

import (
	"bytes"
	"crypto/sha256"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// heldRings names the rings e holds.
func heldRings(e *endpoint) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var held []string
	if e.snd.buf.held() {
		held = append(held, "send ring")
	}
	if e.snd.q != nil {
		held = append(held, "segment queue")
	}
	if e.rcv.buf.held() {
		held = append(held, "receive ring")
	}
	if e.rcv.ofo != nil {
		held = append(held, "out-of-order list")
	}
	return held
}

// sparesFault describes what is wrong with p's spares and the chunk
// spares, if anything: a queue or chunk kept twice, or one e holds.
func sparesFault(p *Protocol, e *endpoint) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	sp := &p.spare
	sp.mu.Lock()
	defer sp.mu.Unlock()
	chunkSpares.mu.Lock()
	defer chunkSpares.mu.Unlock()
	seen := map[any][]string{}
	for _, c := range chunkSpares.free {
		seen[c] = append(seen[c], "spare")
	}
	for _, l := range sp.segs {
		for _, q := range l {
			seen[&q[0]] = append(seen[&q[0]], "spare")
		}
	}
	for _, c := range e.snd.buf.c {
		seen[c] = append(seen[c], "send ring")
	}
	for _, c := range e.rcv.buf.c {
		seen[c] = append(seen[c], "receive ring")
	}
	if e.snd.q != nil {
		seen[&e.snd.q[0]] = append(seen[&e.snd.q[0]], "segment queue")
	}
	for _, users := range seen {
		if len(users) > 1 {
			return "one ring is " + strings.Join(users, ", ")
		}
	}
	return ""
}

// dirtySpares fills the chunk spares, and p's spares, with junk: as
// many chunks as they keep, and queues of every length a connection
// takes.
func dirtySpares(p *Protocol) {
	for range chunkSpareBytes / ringChunk {
		c := new([ringChunk]byte)
		for i := range c {
			c[i] = 0xee
		}
		giveChunk(c)
	}
	sp := &p.spare
	for n := 64; n <= 1024; n <<= 1 {
		q := make([]txSeg, n)
		for i := range q {
			q[i] = txSeg{seq: 7, end: 99, flags: 0xff, sentAt: time.Hour}
		}
		sp.giveSegs(q)
	}
}

// roundData is round r's n bytes, different in every round so that a
// byte left from an earlier round cannot pass for one of this round.
func roundData(r, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>9 + r*61)
	}
	return b
}

// ringRun is what ringRounds saw.
type ringRun struct {
	outs           []out      // every segment the host emitted
	sent, got      [][]byte   // per round: what the host wrote and the peer received
	peerSent, read [][]byte   // per round: what the peer sent and the host read
	held           [][]string // per round: the rings held once idle
}

// ringRounds runs rounds of data both ways on one connection, idle in
// between: the host writes sizes[r] bytes as the send buffer takes them,
// the peer acknowledging what arrives in order and losing the round's
// second data segment the first time it comes; then the peer sends
// sizes[r]/2 bytes with its second and third segments swapped, and the
// host reads a quarter of them halfway through and the rest at the end
// (its receive buffer is 1 MiB, so that they fit its window). With
// dirty, the protocol's spares start full of rings of junk.
func ringRounds(t *testing.T, sizes []int, dirty bool) ringRun {
	h := newHarness(t, Options{ReceiveBuffer: 1 << 20})
	if dirty {
		dirtySpares(h.proto)
	}
	c := h.acceptAfter(linuxPeer, 10*time.Millisecond)
	e := c.ep.(*endpoint)
	var run ringRun
	record := func(o []out) []out {
		run.outs = append(run.outs, o...)
		return o
	}
	for r, size := range sizes {
		// Host to peer.
		data := roundData(r, size)
		rest := data
		var got []byte
		dataSegs := 0
		for {
			if len(rest) > 0 {
				n, err := c.ep.Write(bytes.NewReader(rest), tcpip.WriteOptions{})
				if _, full := err.(*tcpip.ErrWouldBlock); err != nil && !full {
					t.Fatalf("round %d: Write: %v", r, err)
				}
				rest = rest[n:]
			}
			outs := record(h.take())
			if len(outs) == 0 {
				if q, _ := c.ep.GetSockOptInt(tcpip.SendQueueSizeOption); q == 0 && len(rest) == 0 {
					break
				}
				if outs = record(h.advanceUntilOut(time.Minute)); len(outs) == 0 {
					t.Fatalf("round %d: the host sent nothing for a minute with %d bytes to go", r, len(rest))
				}
			}
			for _, o := range outs {
				if len(o.payload) > 0 {
					if dataSegs++; dataSegs == 2 {
						continue // lost
					}
				}
				if o.seq == c.rcvNxt {
					got = append(got, o.payload...)
				}
				c.saw(o)
			}
			c.ackUpTo(c.rcvNxt)
		}
		run.sent, run.got = append(run.sent, data), append(run.got, got)

		// Peer to host, in two halves, the host reading a quarter in
		// between.
		data = roundData(r+100, size/2)
		base := c.sndNxt
		var chunks []int
		for off := 0; off < len(data); off += 1448 {
			chunks = append(chunks, off)
		}
		if len(chunks) >= 3 {
			chunks[1], chunks[2] = chunks[2], chunks[1]
		}
		w := shortWriter{room: len(data) / 4}
		for i, off := range chunks {
			if i > 0 && i == len(chunks)/2 {
				if _, err := c.ep.Read(&w, tcpip.ReadOptions{}); err != nil {
					t.Fatalf("round %d: read: %v", r, err)
				}
				w.room = len(data)
			}
			c.sendAt(base.Add(seqnum.Size(off)), header.TCPFlagAck, data[off:min(off+1448, len(data))])
			c.saw(record(h.take())...)
		}
		c.sndNxt = base.Add(seqnum.Size(len(data)))
		w.room = len(data)
		if _, err := c.ep.Read(&w, tcpip.ReadOptions{}); err != nil && len(data) > 0 {
			t.Fatalf("round %d: read: %v", r, err)
		}
		c.saw(record(h.take())...)
		run.peerSent, run.read = append(run.peerSent, data), append(run.read, w.b)

		// Idle.
		c.saw(record(h.advanceUntilOut(time.Second))...)
		h.advance(time.Second)
		c.saw(record(h.take())...)
		run.held = append(run.held, heldRings(e))
		if f := sparesFault(h.proto, e); f != "" {
			t.Errorf("round %d: %s", r, f)
		}
	}
	return run
}

// shortWriter takes up to room bytes in all, then fails, as a reader's
// full buffer would.
type shortWriter struct {
	b    []byte
	room int
}

func (w *shortWriter) Write(p []byte) (int, error) {
	k := min(len(p), w.room-len(w.b))
	w.b = append(w.b, p[:k]...)
	if k < len(p) {
		return k, io.ErrShortWrite
	}
	return k, nil
}

var ringSizes = []int{1, 1000, 20000, 200000, 5000, 70000}

// An idle connection holds no ring: after each round of data both ways,
// with a loss, a retransmission and reordering, once all is acknowledged
// and read, its send ring, segment queue, receive ring and out-of-order
// list are all given back.
func TestIdleConnectionHoldsNoRing(t *testing.T) {
	run := ringRounds(t, ringSizes, false)
	for r, held := range run.held {
		if len(held) > 0 {
			t.Errorf("round %d (%d bytes out, %d in): idle, the connection holds its %v; want no ring", r, ringSizes[r], len(run.peerSent[r]), held)
		}
	}
}

// Data written or received after the rings were given back and taken
// again arrives intact, and what the host sends and when does not depend
// on what the spares held: a run whose spares start full of junk emits
// the same segments at the same instants as one whose spares start
// empty.
func TestRingsTakenAgainKeepData(t *testing.T) {
	dirty := ringRounds(t, ringSizes, true)
	for r := range ringSizes {
		if a, b := sha256.Sum256(dirty.sent[r]), sha256.Sum256(dirty.got[r]); a != b {
			t.Errorf("round %d: the peer received %d bytes, sha256 %x; want the host's %d bytes, sha256 %x", r, len(dirty.got[r]), b[:6], len(dirty.sent[r]), a[:6])
		}
		if a, b := sha256.Sum256(dirty.peerSent[r]), sha256.Sum256(dirty.read[r]); a != b {
			t.Errorf("round %d: the host read %d bytes, sha256 %x; want the peer's %d bytes, sha256 %x", r, len(dirty.read[r]), b[:6], len(dirty.peerSent[r]), a[:6])
		}
	}
	clean := ringRounds(t, ringSizes, false)
	same := func(a, b out) bool {
		return a.at == b.at && a.flags == b.flags && a.seq == b.seq && a.ack == b.ack && a.wnd == b.wnd &&
			bytes.Equal(a.payload, b.payload) && bytes.Equal(a.rawOpts, b.rawOpts)
	}
	if !slices.EqualFunc(dirty.outs, clean.outs, same) {
		i := 0
		for i < min(len(dirty.outs), len(clean.outs)) && same(dirty.outs[i], clean.outs[i]) {
			i++
		}
		t.Fatalf("with junk in the spares the host emitted %d segments, with none %d; the first difference is segment %d", len(dirty.outs), len(clean.outs), i)
	}
}

// The spares hand back what they were given, allocating nothing, and
// keep no more than spareBytes of each length and no queue longer; the
// chunk spares keep no more than chunkSpareBytes.
func TestSparesBounded(t *testing.T) {
	var sp spares
	q := sp.takeSegs(1 << 10)
	if allocs := testing.AllocsPerRun(100, func() {
		sp.giveSegs(q)
		q = sp.takeSegs(1 << 10)
	}); allocs != 0 {
		t.Errorf("a queue given back and taken again: %v allocations; want 0", allocs)
	}
	per := spareBytes / (1 << 10 * int(unsafe.Sizeof(txSeg{})))
	for range 2 * per {
		sp.giveSegs(make([]txSeg, 1<<10))
	}
	if n := len(sp.segs[10]); n != per {
		t.Errorf("%d queues of 1024 segments kept; want %d, spareBytes' worth", n, per)
	}
	long := 1
	for long*int(unsafe.Sizeof(txSeg{})) <= spareBytes {
		long *= 2
	}
	sp.giveSegs(make([]txSeg, long))
	sp.giveSegs(make([]txSeg, 3000))
	for k, l := range sp.segs {
		if k != 10 && len(l) > 0 {
			t.Errorf("a queue of %d segments kept; want none longer than spareBytes or of a length not a power of two", 1<<k)
		}
	}

	c := takeChunk()
	if allocs := testing.AllocsPerRun(100, func() {
		giveChunk(c)
		c = takeChunk()
	}); allocs != 0 {
		t.Errorf("a chunk given back and taken again: %v allocations; want 0", allocs)
	}
	for range 2 * chunkSpareBytes / ringChunk {
		giveChunk(new([ringChunk]byte))
	}
	chunkSpares.mu.Lock()
	n := len(chunkSpares.free)
	chunkSpares.mu.Unlock()
	if n != chunkSpareBytes/ringChunk {
		t.Errorf("%d chunks kept; want %d, chunkSpareBytes' worth", n, chunkSpareBytes/ringChunk)
	}
}

// A send ring that grows while it holds data, sent and unsent, its front
// inside its first chunk and its data across two, keeps it: the peer
// acknowledges part of the first write and shuts its window, more is
// written (into a second chunk), then so much that the ring takes many
// more; the window opens and every byte arrives. The spares start full
// of junk.
func TestSendRingGrowsKeepingData(t *testing.T) {
	h := newHarness(t, Options{})
	dirtySpares(h.proto)
	c := h.acceptAfter(linuxPeer, 10*time.Millisecond)
	e := c.ep.(*endpoint)
	data := roundData(1, 200000)
	var got []byte
	deliver := func(outs []out) {
		for _, o := range outs {
			if o.seq == c.rcvNxt {
				got = append(got, o.payload...)
			}
			c.saw(o)
		}
	}
	base := c.rcvNxt
	c.write(data[:10000])
	deliver(h.take())
	end := c.rcvNxt
	c.p.window = 0
	c.ackUpTo(base.Add(4 * 1448))
	c.rcvNxt = end
	c.write(data[10000:18000])
	e.mu.Lock()
	across := e.snd.buf.off > 0 && len(e.snd.buf.c) == 2
	e.snd.limit = 1 << 20 // room for the rest at once
	e.mu.Unlock()
	if !across {
		t.Fatalf("the send ring's data does not start inside its first chunk and end in its second; the test needs it to")
	}
	c.write(data[18000:])
	c.p.window = linuxPeer.window
	c.ackUpTo(c.rcvNxt)
	for outs := h.take(); len(outs) > 0; outs = h.take() {
		deliver(outs)
		c.ackUpTo(c.rcvNxt)
	}
	if a, b := sha256.Sum256(data), sha256.Sum256(got); a != b {
		t.Errorf("the peer received %d bytes, sha256 %x; want the %d written, sha256 %x", len(got), b[:6], len(data), a[:6])
	}
	if held := heldRings(e); len(held) > 0 {
		t.Errorf("all acknowledged, the connection holds its %v; want no ring", held)
	}
}

// A Read takes all the data in order that the reader has room for, as
// tcp_recvmsg copies until the user's buffer is full, wherever the data
// lies in the ring: here 11,000 bytes from inside the ring's fourth
// chunk into its fifth, after 59,000 of 60,000 were read.
func TestReadTakesAllItHasRoomFor(t *testing.T) {
	h := newHarness(t, Options{ReceiveBuffer: 1 << 20})
	c := h.acceptAfter(linuxPeer, 10*time.Millisecond)
	data := roundData(3, 70000)
	sendRange := func(from, to int) {
		for off := from; off < to; off += 1448 {
			c.sendAt(c.sndNxt, header.TCPFlagAck, data[off:min(off+1448, to)])
			c.sndNxt = c.sndNxt.Add(seqnum.Size(min(1448, to-off)))
			c.saw(h.take()...)
		}
	}
	sendRange(0, 60000)
	w := shortWriter{room: 59000}
	if _, err := c.ep.Read(&w, tcpip.ReadOptions{}); err != nil {
		t.Fatalf("read: %v", err)
	}
	sendRange(60000, 70000)
	w = shortWriter{room: 1 << 20}
	res, err := c.ep.Read(&w, tcpip.ReadOptions{})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if n := res.Count; n != 11000 || !bytes.Equal(w.b, data[59000:]) {
		t.Errorf("a Read with room for all 11000 unread bytes took %d (equal to what was sent: %t); want all 11000", res.Count, bytes.Equal(w.b, data[59000:59000+res.Count]))
	}
}
