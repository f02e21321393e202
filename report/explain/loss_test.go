package explain

import (
	"encoding/binary"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// A wire for tests: packets between a client and a server, each taking
// oneWay to cross, with no serialization. Events are collected, then
// handed to an Analyzer in time order (ties in the order they were
// made), as a link would.
const (
	oneWay = 10 * time.Millisecond
	mss    = 1000
	ms     = time.Millisecond
)

var (
	client = netip.MustParseAddrPort("198.18.0.1:41000")
	server = netip.MustParseAddrPort("198.18.0.2:80")
)

const (
	flagSYN = 0x02
	flagACK = 0x10
)

type wire struct {
	events []link.Event
	sacks  bool // SYNs offer SACK
}

// tcpSeg builds an IPv4 TCP packet with valid checksums.
func tcpSeg(src, dst netip.AddrPort, seq, ack uint32, flags byte, n int, opts []byte) []byte {
	for len(opts)%4 != 0 {
		opts = append(opts, optNop)
	}
	tl := 20 + len(opts)
	b := make([]byte, 20+tl+n)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
	b[8], b[9] = 64, 6
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(b[12:16], s[:])
	copy(b[16:20], d[:])
	binary.BigEndian.PutUint16(b[10:12], ^fold(sum(0, b[:20])))
	t := b[20:]
	binary.BigEndian.PutUint16(t[0:2], src.Port())
	binary.BigEndian.PutUint16(t[2:4], dst.Port())
	binary.BigEndian.PutUint32(t[4:8], seq)
	binary.BigEndian.PutUint32(t[8:12], ack)
	t[12] = byte(tl/4) << 4
	t[13] = flags
	binary.BigEndian.PutUint16(t[14:16], 65535)
	copy(t[20:], opts)
	cs := sum(0, b[12:20]) + 6 + uint32(len(t))
	binary.BigEndian.PutUint16(t[16:18], ^fold(sum(cs, t)))
	return b
}

// fate is what the wire does to a packet.
type fate int

const (
	arrives fate = iota
	dropped
	corrupted // arrives with a bit flipped
)

// send puts pkt on the wire at at.
func (w *wire) send(at time.Duration, pkt []byte, f fate) {
	w.events = append(w.events, link.Event{Kind: link.EventSend, At: at, Packet: pkt})
	if f == dropped {
		w.events = append(w.events, link.Event{Kind: link.EventDrop, At: at, Packet: pkt, Reason: link.DropLoss})
		return
	}
	if f == corrupted {
		pkt = append([]byte(nil), pkt...)
		pkt[len(pkt)-1] ^= 4
	}
	w.events = append(w.events,
		link.Event{Kind: link.EventQueue, At: at, Start: at, Finish: at, Due: at + oneWay, Packet: pkt},
		link.Event{Kind: link.EventDeliver, At: at + oneWay, Packet: pkt})
}

// handshake opens the connection at 0: SYN, SYN-ACK at 10 ms, ACK at 20
// ms, all delivered by 30 ms. Sequence numbers start at 0 on both sides,
// so the server's data starts at 1.
func (w *wire) handshake() {
	var opt []byte
	if w.sacks {
		opt = []byte{optSACKPerm, 2}
	}
	w.send(0, tcpSeg(client, server, 0, 0, flagSYN, 0, opt), arrives)
	w.send(oneWay, tcpSeg(server, client, 0, 1, flagSYN|flagACK, 0, opt), arrives)
	w.send(2*oneWay, tcpSeg(client, server, 1, 1, flagACK, 0, nil), arrives)
}

// data sends the server's i-th segment (from 1) at at.
func (w *wire) data(at time.Duration, i int, f fate) {
	w.send(at, tcpSeg(server, client, uint32(1+(i-1)*mss), 1, flagACK, mss, nil), f)
}

// ack sends the client's ACK of the first n segments at at, with SACK
// blocks of segments [from, to] (inclusive, from 1) if given.
func (w *wire) ack(at time.Duration, n int, f fate, blocks ...[2]int) {
	var opt []byte
	if len(blocks) > 0 {
		opt = []byte{optNop, optNop, optSACKBlock, byte(2 + 8*len(blocks))}
		for _, b := range blocks {
			opt = binary.BigEndian.AppendUint32(opt, uint32(1+(b[0]-1)*mss))
			opt = binary.BigEndian.AppendUint32(opt, uint32(1+b[1]*mss))
		}
	}
	w.send(at, tcpSeg(client, server, 1, uint32(1+n*mss), flagACK, 0, opt), f)
}

func lostIf(lost bool) fate {
	if lost {
		return dropped
	}
	return arrives
}

func (w *wire) analyze() *Analyzer {
	sort.SliceStable(w.events, func(i, j int) bool { return w.events[i].At < w.events[j].At })
	a := &Analyzer{}
	for _, e := range w.events {
		a.Observe(e)
	}
	return a
}

func (w *wire) breakdown(to time.Duration) Breakdown { return w.analyze().Breakdown(0, to) }

func checkPartition(t *testing.T, b Breakdown) {
	t.Helper()
	var sum time.Duration
	for _, c := range Categories() {
		sum += b.Time[c]
	}
	if sum != b.Elapsed() {
		t.Errorf("categories add up to %v, elapsed %v", sum, b.Elapsed())
	}
}

// want is what a scenario's breakdown must say.
type want struct {
	time     map[Category]time.Duration // the rest zero
	repaired map[Category]int
	probes   int
	timeouts int
	unsure   int
	unneeded int
	episodes int
}

func (wt want) check(t *testing.T, b Breakdown) {
	t.Helper()
	checkPartition(t, b)
	for _, c := range Categories() {
		if b.Time[c] != wt.time[c] {
			t.Errorf("%s: %v, want %v", c, b.Time[c], wt.time[c])
		}
	}
	for _, c := range LossRecovery() {
		if b.Loss.Repaired[c] != wt.repaired[c] {
			t.Errorf("segments repaired by %s: %d, want %d", c, b.Loss.Repaired[c], wt.repaired[c])
		}
	}
	l := b.Loss
	if l.Probes != wt.probes || l.Timeouts != wt.timeouts || l.Unsure != wt.unsure || l.Unneeded != wt.unneeded || l.Episodes != wt.episodes {
		t.Errorf("probes %d, timeouts %d (unsure %d), unneeded %d, recoveries %d; want %d, %d (%d), %d, %d",
			l.Probes, l.Timeouts, l.Unsure, l.Unneeded, l.Episodes, wt.probes, wt.timeouts, wt.unsure, wt.unneeded, wt.episodes)
	}
}

// A segment lost in the middle of a flight is reported by the SACKs of
// those after it and sent again at once: fast retransmit, from the loss
// (30 ms) to the ACK that covers its repair (70 ms).
func TestFastRetransmit(t *testing.T) {
	w := &wire{sacks: true}
	w.handshake()
	for i := 1; i <= 4; i++ {
		w.data(30*ms, i, lostIf(i == 2))
	}
	w.ack(40*ms, 1, arrives)
	w.ack(40*ms, 1, arrives, [2]int{3, 3})
	w.ack(40*ms, 1, arrives, [2]int{3, 4})
	w.data(50*ms, 2, arrives) // at the third duplicate ACK's arrival
	w.ack(60*ms, 4, arrives)
	want{
		time:     map[Category]time.Duration{Handshake: 20 * ms, RoundTrip: 10 * ms, FastRecovery: 40 * ms},
		repaired: map[Category]int{FastRecovery: 1},
		episodes: 1,
	}.check(t, w.breakdown(70*ms))
}

// Without SACK the link cannot tell which segment the duplicate ACKs are
// about; a retransmission at once after them is fast retransmit all the
// same.
func TestFastRetransmitWithoutSACK(t *testing.T) {
	w := &wire{}
	w.handshake()
	for i := 1; i <= 4; i++ {
		w.data(30*ms, i, lostIf(i == 2))
	}
	for range 3 {
		w.ack(40*ms, 1, arrives)
	}
	w.data(50*ms, 2, arrives)
	w.ack(60*ms, 4, arrives)
	want{
		time:     map[Category]time.Duration{Handshake: 20 * ms, RoundTrip: 10 * ms, FastRecovery: 40 * ms},
		repaired: map[Category]int{FastRecovery: 1},
		episodes: 1,
	}.check(t, w.breakdown(70*ms))
}

// The last two segments of a flight are lost: nothing after them
// arrives, so no ACK reports them. The probe timer sends the last one
// again; its SACK reports the other, sent again at once, within the
// probe's recovery. Both count as repaired after a tail-loss probe, from
// the loss (30 ms) to the ACK of both (130 ms).
func TestTailLossProbe(t *testing.T) {
	w := &wire{sacks: true}
	w.handshake()
	for i := 1; i <= 4; i++ {
		w.data(30*ms, i, lostIf(i >= 3))
	}
	w.ack(40*ms, 2, arrives)
	w.data(90*ms, 4, arrives) // the probe, two round trips after the ACK
	w.ack(100*ms, 2, arrives, [2]int{4, 4})
	w.data(110*ms, 3, arrives)
	w.ack(120*ms, 4, arrives)
	want{
		time:     map[Category]time.Duration{Handshake: 20 * ms, RoundTrip: 10 * ms, TailLossProbe: 100 * ms},
		repaired: map[Category]int{TailLossProbe: 2},
		probes:   1,
		episodes: 1,
	}.check(t, w.breakdown(130*ms))
}

// A probe that carries new data finds the loss as well.
func TestTailLossProbeNewData(t *testing.T) {
	w := &wire{sacks: true}
	w.handshake()
	for i := 1; i <= 4; i++ {
		w.data(30*ms, i, lostIf(i == 4))
	}
	w.ack(40*ms, 3, arrives)
	w.data(90*ms, 5, arrives) // the probe: new data
	w.ack(100*ms, 3, arrives, [2]int{5, 5})
	w.data(110*ms, 4, arrives)
	w.ack(120*ms, 5, arrives)
	want{
		time:     map[Category]time.Duration{Handshake: 20 * ms, RoundTrip: 10 * ms, TailLossProbe: 100 * ms},
		repaired: map[Category]int{TailLossProbe: 1},
		probes:   1,
		episodes: 1,
	}.check(t, w.breakdown(130*ms))
}

// A whole flight is lost, and the probe after it: the retransmission
// timer sends the first segment again at 230 ms, and the rest follow at
// its ACK, in the timeout's recovery. All of it, from the loss at 30 ms
// to the last ACK at 270 ms, is the timeout's; the probe's silence lies
// inside it.
func TestTimeout(t *testing.T) {
	w := &wire{sacks: true}
	w.handshake()
	for i := 1; i <= 4; i++ {
		w.data(30*ms, i, dropped)
	}
	w.data(70*ms, 4, dropped) // the probe, lost too
	w.data(230*ms, 1, arrives)
	w.ack(240*ms, 1, arrives)
	for i := 2; i <= 4; i++ {
		w.data(250*ms, i, arrives)
	}
	w.ack(260*ms, 4, arrives)
	want{
		time:     map[Category]time.Duration{Handshake: 20 * ms, RoundTrip: 10 * ms, Timeout: 240 * ms},
		repaired: map[Category]int{Timeout: 4},
		probes:   1,
		timeouts: 1,
		episodes: 1,
	}.check(t, w.breakdown(270*ms))
}

// A retransmission of a segment already sent again, before any news of
// what was sent after that: only a timer can send it, however soon after
// the last duplicate ACK it leaves. (Duplicate ACKs of a long flight
// arrive up to 5 ms before the timer fires, 200 ms after the fast
// retransmit.)
func TestTimeoutWhileDuplicateACKsArrive(t *testing.T) {
	w := &wire{sacks: true}
	w.handshake()
	for i := 1; i <= 24; i++ {
		w.data(30*ms, i, lostIf(i == 1))
	}
	for k := 2; k <= 4; k++ {
		w.ack(40*ms, 0, arrives, [2]int{2, k})
	}
	w.data(50*ms, 1, dropped) // fast retransmit, lost
	for k := 5; k <= 24; k++ {
		w.ack(35*ms+time.Duration(k-4)*10*ms, 0, arrives, [2]int{2, k})
	}
	w.data(250*ms, 1, arrives) // 5 ms after the last duplicate ACK, with no news since the first retransmission
	w.ack(260*ms, 24, arrives)
	want{
		time:     map[Category]time.Duration{Handshake: 20 * ms, RoundTrip: 10 * ms, Timeout: 240 * ms},
		repaired: map[Category]int{Timeout: 1},
		timeouts: 1,
		episodes: 2, // fast recovery, then the timeout cuts the window again
	}.check(t, w.breakdown(270*ms))
}

// A retransmission at the instant an ACK arrives is that ACK's doing,
// even with no news of what it resends: gVisor, entering a new recovery
// as the last one ends, sends the head again at once.
func TestRetransmitAtACKIsNotATimer(t *testing.T) {
	w := &wire{sacks: true}
	w.handshake()
	for i := 1; i <= 4; i++ {
		w.data(30*ms, i, lostIf(i == 1))
	}
	w.ack(40*ms, 0, arrives, [2]int{2, 3})
	w.data(50*ms, 1, arrives)
	w.ack(45*ms, 0, arrives, [2]int{2, 4})
	w.data(55*ms, 1, arrives) // at that ACK, with no news since the first retransmission
	w.ack(60*ms, 4, arrives)
	w.ack(65*ms, 4, arrives)
	want{
		time:     map[Category]time.Duration{Handshake: 20 * ms, RoundTrip: 15 * ms, FastRecovery: 40 * ms},
		repaired: map[Category]int{FastRecovery: 1},
		episodes: 1,
	}.check(t, w.breakdown(75*ms))
}

// A segment lost whose duplicate got through needs no repair: its
// retransmission, if any, repairs nothing, and no time is loss recovery.
func TestDuplicateHealsLoss(t *testing.T) {
	w := &wire{sacks: true}
	w.handshake()
	p := tcpSeg(server, client, 1, 1, flagACK, mss, nil)
	w.events = append(w.events,
		link.Event{Kind: link.EventSend, At: 30 * ms, Packet: p},
		link.Event{Kind: link.EventDrop, At: 30 * ms, Packet: p, Reason: link.DropLoss}, // the copy, lost
		link.Event{Kind: link.EventQueue, At: 30 * ms, Start: 30 * ms, Finish: 30 * ms, Due: 40 * ms, Packet: p},
		link.Event{Kind: link.EventDeliver, At: 40 * ms, Packet: p})
	w.ack(40*ms, 1, arrives)
	want{time: map[Category]time.Duration{Handshake: 20 * ms, RoundTrip: 30 * ms}}.check(t, w.breakdown(50*ms))
}

// A lone segment sent again after the ACK that ended a recovery: gVisor
// probes there, Linux times out; explain says it cannot tell.
func TestUnsureAfterRecovery(t *testing.T) {
	w := &wire{sacks: true}
	w.handshake()
	for i := 1; i <= 4; i++ {
		w.data(30*ms, i, lostIf(i == 1))
	}
	w.ack(40*ms, 0, arrives, [2]int{2, 4})
	w.data(50*ms, 1, arrives)
	w.data(50*ms, 5, dropped) // new data in recovery, lost
	w.ack(60*ms, 4, arrives)  // ends the recovery
	w.data(300*ms, 5, arrives)
	w.ack(310*ms, 5, arrives)
	b := w.breakdown(320 * ms)
	checkPartition(t, b)
	if b.Loss.Timeouts != 1 || b.Loss.Unsure != 1 || b.Loss.Probes != 0 || b.Loss.Repaired[Timeout] != 1 || b.Loss.Repaired[FastRecovery] != 1 {
		t.Errorf("loss %+v; want one unsure timeout that repaired one segment, one fast retransmit", b.Loss)
	}
}

// Without both SYNs the link cannot tell whether the sender could probe.
func TestUnsureWithoutHandshake(t *testing.T) {
	w := &wire{sacks: true}
	for i := 1; i <= 4; i++ {
		w.data(30*ms, i, lostIf(i == 4))
	}
	w.ack(40*ms, 3, arrives)
	w.data(300*ms, 4, arrives)
	w.ack(310*ms, 4, arrives)
	b := w.breakdown(320 * ms)
	if b.Loss.Timeouts != 1 || b.Loss.Unsure != 1 || b.Loss.Repaired[Timeout] != 1 {
		t.Errorf("loss %+v; want one unsure timeout", b.Loss)
	}
}

// A segment corrupted on the way is lost at its arrival, where the
// receiver's checksum discards it.
func TestCorruptedIsLost(t *testing.T) {
	w := &wire{sacks: true}
	w.handshake()
	for i := 1; i <= 4; i++ {
		f := arrives
		if i == 2 {
			f = corrupted
		}
		w.data(30*ms, i, f)
	}
	w.ack(40*ms, 1, arrives, [2]int{3, 4})
	w.data(50*ms, 2, arrives)
	w.ack(60*ms, 4, arrives)
	want{
		time:     map[Category]time.Duration{Handshake: 20 * ms, RoundTrip: 20 * ms, FastRecovery: 30 * ms},
		repaired: map[Category]int{FastRecovery: 1},
		episodes: 1,
	}.check(t, w.breakdown(70*ms))
}

// A retransmission of what arrived (its ACK was lost) repairs nothing
// the link lost; the silence before it is still the timeout's.
func TestLostACKTimeout(t *testing.T) {
	w := &wire{sacks: true}
	w.handshake()
	w.data(30*ms, 1, arrives)
	w.ack(40*ms, 1, dropped)
	w.data(290*ms, 1, arrives) // lone segment, SACK on: a probe
	w.ack(300*ms, 1, arrives)
	want{
		time:     map[Category]time.Duration{Handshake: 20 * ms, RoundTrip: 30 * ms, TailLossProbe: 260 * ms},
		probes:   1,
		unneeded: 1,
	}.check(t, w.breakdown(310*ms))
}

// Nothing lost, nothing claimed: the categories of a lossless transfer
// are those without loss recovery.
func TestLosslessClaimsNoRecovery(t *testing.T) {
	w := &wire{sacks: true}
	w.handshake()
	for i := 1; i <= 4; i++ {
		w.data(30*ms, i, arrives)
	}
	w.ack(40*ms, 4, arrives)
	want{time: map[Category]time.Duration{Handshake: 20 * ms, RoundTrip: 30 * ms}}.check(t, w.breakdown(50*ms))
}

// The delayed-ACK line and the held-ACK count are the same ACKs: those
// the timer released. One replaced by a newer ACK delayed nothing of its
// own and counts in neither.
func TestHeldACKsCountedOnce(t *testing.T) {
	a := &Analyzer{}
	ack := tcpSeg(client, server, 1, 1001, flagACK, 0, nil)
	a.Observe(link.Event{Kind: link.EventHold, At: 0, Packet: ack})
	a.Observe(link.Event{Kind: link.EventSupersede, At: 5 * ms, Held: 5 * ms, Packet: ack})
	a.Observe(link.Event{Kind: link.EventHold, At: 10 * ms, Packet: ack})
	a.Observe(link.Event{Kind: link.EventRelease, At: 50 * ms, Held: 40 * ms, Packet: ack})
	a.Observe(link.Event{Kind: link.EventRelease, At: 60 * ms, Held: 0, Packet: ack})
	b := a.Breakdown(0, 60*ms)
	if b.HeldACKs != 1 || b.HeldTime != 40*ms || len(b.Holds) != 1 || b.Replaced != 1 {
		t.Errorf("%d ACKs held (%v), %d listed, %d replaced; want 1 (40ms), 1, 1", b.HeldACKs, b.HeldTime, len(b.Holds), b.Replaced)
	}
	if b.Time[DelayedACK] != 40*ms || b.Time[Other] != 20*ms {
		t.Errorf("delayed-ACK holds %v, other %v; want 40ms and 20ms", b.Time[DelayedACK], b.Time[Other])
	}
}

// Checksums: what the test packets carry is what intact accepts, and a
// flipped bit anywhere fails it.
func TestIntact(t *testing.T) {
	p := tcpSeg(server, client, 1, 1, flagACK, 100, []byte{optSACKPerm, 2})
	if !intact(p) {
		t.Fatal("a packet with valid checksums fails")
	}
	for i := range p {
		q := append([]byte(nil), p...)
		q[i] ^= 0x10
		if intact(q) {
			t.Errorf("bit flipped at byte %d passes", i)
		}
	}
}
