package link

import (
	"context"
	"encoding/binary"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
)

// arrival is one delivered packet as the test saw it.
type arrival struct {
	at  time.Duration // since the link started
	dir Dir
	n   int
	b   []byte
}

// rig is a link on a virtual clock that records what it delivers.
type rig struct {
	t   *testing.T
	clk *clock.Virtual
	l   *Link

	mu   sync.Mutex
	got  []arrival
	echo func(dir Dir, pkt []byte) // optional reaction to a delivery
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	r := &rig{t: t, clk: clock.NewVirtual(0, nil)}
	t.Cleanup(r.clk.Close)
	l, err := New(cfg, r.clk, func(dir Dir, pkt []byte) {
		r.mu.Lock()
		r.got = append(r.got, arrival{at: r.clk.Now().Sub(r.l.start), dir: dir, n: len(pkt), b: append([]byte(nil), pkt...)})
		echo := r.echo
		r.mu.Unlock()
		if echo != nil {
			echo(dir, pkt)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	r.l = l
	t.Cleanup(l.Close)
	return r
}

// at runs f at virtual time d after the link started, as a clock event.
func (r *rig) at(d time.Duration, f func()) {
	r.clk.AfterFunc(d-r.clk.Now().Sub(r.l.start), f)
}

// run lets virtual time pass until d after the link started.
func (r *rig) run(d time.Duration) {
	clock.Sleep(context.Background(), r.clk, d-r.clk.Now().Sub(r.l.start))
}

func (r *rig) arrivals() []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]arrival(nil), r.got...)
}

var (
	ipA = [4]byte{198, 18, 0, 1}
	ipB = [4]byte{198, 18, 0, 2}
)

// tcpPkt builds an IPv4 TCP packet from src to dst with the given payload
// length and TCP options.
func tcpPkt(src, dst [4]byte, sport, dport uint16, seq, ack uint32, flags uint8, payload int, opts ...byte) []byte {
	for len(opts)%4 != 0 {
		opts = append(opts, 1)
	}
	thl := 20 + len(opts)
	b := make([]byte, 20+thl+payload)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[6] = 0x40 // DF
	b[8] = 64
	b[9] = 6
	copy(b[12:16], src[:])
	copy(b[16:20], dst[:])
	t := b[20:]
	binary.BigEndian.PutUint16(t[0:], sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	binary.BigEndian.PutUint32(t[4:], seq)
	binary.BigEndian.PutUint32(t[8:], ack)
	t[12] = byte(thl/4) << 4
	t[13] = flags
	binary.BigEndian.PutUint16(t[14:], 65535)
	copy(t[20:], opts)
	return b
}

func rawPkt(n int) []byte {
	b := make([]byte, n)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(n))
	b[9] = 17 // UDP: never touched by the ACK stage
	return b
}

func TestSerializationAndDelayExact(t *testing.T) {
	r := newRig(t, Config{Rate: 12_000_000, Delay: 10 * time.Millisecond})
	r.at(0, func() {
		r.l.Send(AtoB, rawPkt(1500))
		r.l.Send(AtoB, rawPkt(1500))
		r.l.Send(AtoB, rawPkt(750))
	})
	r.run(time.Second)
	got := r.arrivals()
	want := []time.Duration{11 * time.Millisecond, 12 * time.Millisecond, 12*time.Millisecond + 500*time.Microsecond}
	if len(got) != len(want) {
		t.Fatalf("delivered %d packets, want %d", len(got), len(want))
	}
	for i, a := range got {
		if a.at != want[i] || a.dir != AtoB {
			t.Errorf("packet %d arrived at %v on %v, want %v on a>b", i, a.at, a.dir, want[i])
		}
	}
}

func TestDirectionsAreIndependent(t *testing.T) {
	r := newRig(t, Config{Rate: 12_000_000, Delay: 10 * time.Millisecond})
	r.at(0, func() {
		r.l.Send(AtoB, rawPkt(1500))
		r.l.Send(BtoA, rawPkt(1500))
	})
	r.run(time.Second)
	for _, a := range r.arrivals() {
		if a.at != 11*time.Millisecond {
			t.Errorf("%v packet arrived at %v, want 11ms", a.dir, a.at)
		}
	}
}

func TestQueueOverflowDropsExactlyTheExcess(t *testing.T) {
	r := newRig(t, Config{Rate: 1_000_000, Qdisc: Qdisc{Limit: 10}})
	r.at(0, func() {
		for range 25 {
			r.l.Send(AtoB, rawPkt(1000))
		}
	})
	r.run(time.Second)
	st := r.l.Stats()[AtoB]
	if len(r.arrivals()) != 10 || st.Packets != 10 {
		t.Errorf("delivered %d (stats %d), want 10", len(r.arrivals()), st.Packets)
	}
	if st.Drops[DropQueueFull] != 15 || st.Drops.Total() != 15 {
		t.Errorf("drops %v, want 15 queue-full", st.Drops)
	}
	if st.PeakQueuePackets != 10 {
		t.Errorf("peak queue %d, want 10", st.PeakQueuePackets)
	}
	// Once the queue drains by one packet, one more fits.
	r.at(r.clk.Now().Sub(r.l.start)+time.Millisecond, func() {
		for range 3 {
			r.l.Send(AtoB, rawPkt(1000))
		}
	})
	r.run(2 * time.Second)
	if st := r.l.Stats()[AtoB]; st.Packets != 13 || st.Drops.Total() != 15 {
		t.Errorf("after draining: delivered %d, drops %d; want 13 and 15", st.Packets, st.Drops.Total())
	}
}

// Noise delays each arrival by its base and an exponential draw, keeps a
// burst in order, and gives the same instants for the same seed; a link
// with neither delay nor rate delays its packets too (the far node's
// time is the node's, not the wire's). Spread apart, packets wait Base
// plus Spread on average.
func TestNoiseDelaysAndKeepsOrder(t *testing.T) {
	noise := Noise{Base: 25 * time.Microsecond, Spread: 30 * time.Microsecond}
	arrive := func(seed uint64) []arrival {
		r := newRig(t, Config{Delay: 10 * time.Millisecond, Noise: noise, Seed: seed})
		r.at(0, func() {
			for i := range 50 {
				r.l.Send(AtoB, rawPkt(100+i))
			}
		})
		r.run(time.Second)
		return r.arrivals()
	}
	got := arrive(1)
	if len(got) != 50 {
		t.Fatalf("delivered %d packets, want 50", len(got))
	}
	for i, a := range got {
		if a.n != 100+i {
			t.Fatalf("packet %d of the burst arrived as the %dth", a.n-100, i)
		}
		if a.at < 10*time.Millisecond+noise.Base {
			t.Errorf("packet %d arrived at %v; want %v or later", i, a.at, 10*time.Millisecond+noise.Base)
		}
	}
	if got[0].at == got[49].at {
		t.Errorf("every packet arrived at %v: no spread", got[0].at)
	}
	for i, a := range arrive(1) {
		if a.at != got[i].at {
			t.Fatalf("packet %d arrived at %v, and at %v with the same seed", i, a.at, got[i].at)
		}
	}
	bare := newRig(t, Config{Noise: noise})
	bare.at(0, func() { bare.l.Send(AtoB, rawPkt(100)) })
	bare.run(time.Second)
	if a := bare.arrivals(); len(a) != 1 || a[0].at < noise.Base {
		t.Errorf("on a link with neither delay nor rate: %+v; want one arrival %v or later", a, noise.Base)
	}
	const n = 4000
	apart := newRig(t, Config{Noise: noise, Seed: 7})
	for i := range n {
		apart.at(time.Duration(i)*time.Millisecond, func() { apart.l.Send(AtoB, rawPkt(100)) })
	}
	apart.run(time.Duration(n+1) * time.Millisecond)
	var sum time.Duration
	for i, a := range apart.arrivals() {
		sum += a.at - time.Duration(i)*time.Millisecond
	}
	// Exactly 25 + 30 µs on average over infinitely many; 4000 draws
	// of the exponential part have a standard error of 0.5 µs.
	if mean := sum / n; mean < 53*time.Microsecond || mean > 57*time.Microsecond {
		t.Errorf("packets 1 ms apart waited %v on average; want 55µs (25µs + a mean 30µs exponential)", mean)
	}
}

// The tie noise breaks: a reply to a packet reaches a full FIFO at the
// very instant the packet before it leaves, both sent in answer to
// deliveries. Without noise the departure always comes first; with an
// exponential wait, each order about half the time over seeds.
func TestNoiseBreaksAnArrivalDepartureTie(t *testing.T) {
	roomFor := func(seed uint64, noise Noise) bool {
		// Two probes A→B, 8 ms apart; B answers each with a packet of
		// 1000 bytes into a 1-packet FIFO at 1 Mbit/s: 8 ms on the wire,
		// so the second answer arrives as the first one's last bit leaves.
		slow := Config{Rate: 1_000_000, Qdisc: Qdisc{Limit: 1}}
		r := newRig(t, Config{Delay: 5 * time.Millisecond, Noise: noise, Seed: seed}.WithBtoA(slow))
		r.echo = func(dir Dir, pkt []byte) {
			if dir == AtoB {
				r.l.Send(BtoA, rawPkt(1000))
			}
		}
		r.at(0, func() { r.l.Send(AtoB, rawPkt(100)) })
		r.at(8*time.Millisecond, func() { r.l.Send(AtoB, rawPkt(100)) })
		r.run(time.Second)
		return r.l.Stats()[BtoA].Packets == 2
	}
	const seeds = 200
	room := map[Noise]int{}
	for _, noise := range []Noise{{}, DefaultNoise} {
		for seed := range uint64(seeds) {
			if roomFor(seed, noise) {
				room[noise]++
			}
		}
	}
	if room[Noise{}] != seeds {
		t.Errorf("without noise the second answer found room %d times in %d; want always", room[Noise{}], seeds)
	}
	// Each seed decides alike on every run; the count is the draws'.
	if n := room[DefaultNoise]; n != 97 {
		t.Errorf("with %v of noise the second answer found room %d times in %d; want about half", DefaultNoise, n, seeds)
	}
}

func TestQueueByteLimit(t *testing.T) {
	r := newRig(t, Config{Rate: 1_000_000, Qdisc: Qdisc{LimitBytes: 3000}})
	r.at(0, func() {
		for range 5 {
			r.l.Send(AtoB, rawPkt(1000))
		}
	})
	r.run(time.Second)
	st := r.l.Stats()[AtoB]
	if st.Packets != 3 || st.Drops[DropQueueFull] != 2 || st.PeakQueueBytes != 3000 {
		t.Errorf("delivered %d, dropped %d, peak %d bytes; want 3, 2, 3000", st.Packets, st.Drops[DropQueueFull], st.PeakQueueBytes)
	}
}

func TestTooBigDropped(t *testing.T) {
	r := newRig(t, Config{MTU: 576})
	r.at(0, func() { r.l.Send(AtoB, rawPkt(577)); r.l.Send(AtoB, rawPkt(576)) })
	r.run(time.Second)
	st := r.l.Stats()[AtoB]
	if st.Packets != 1 || st.Drops[DropTooBig] != 1 {
		t.Errorf("delivered %d, too-big %d; want 1 and 1", st.Packets, st.Drops[DropTooBig])
	}
}

// Flow under test: data from A (port 1000) to B (port 80); B ACKs.
const (
	aPort, bPort = 1000, 80
	iss, irs     = 5000, 9000 // A's and B's initial sequence numbers
	mss          = 1448
)

// handshake delivers A's SYN and B's SYN-ACK, then exhausts B's quick-ACK
// mode by having B answer data with data (interactive), as Linux does after
// the first reply.
func handshake(r *rig) {
	r.l.Send(AtoB, tcpPkt(ipA, ipB, aPort, bPort, iss, 0, flagSYN, 0))
	r.l.Send(BtoA, tcpPkt(ipB, ipA, bPort, aPort, irs, iss+1, flagSYN|flagACK, 0))
}

func dataAB(seq uint32, n int) []byte {
	return tcpPkt(ipA, ipB, aPort, bPort, seq, irs+1, flagACK, n)
}

func ackBA(ack uint32) []byte {
	return tcpPkt(ipB, ipA, bPort, aPort, irs+1, ack, flagACK, 0)
}

// interactiveRig returns a rig with DelayedACK on, a connection set up, and
// B in interactive (pingpong) mode: the state in which Linux delays ACKs.
func interactiveRig(t *testing.T) *rig {
	r := newRig(t, Config{DelayedACK: 40 * time.Millisecond, Delay: time.Millisecond})
	r.at(0, func() { handshake(r) })
	// A's ACK of the SYN-ACK, then 4 bytes; B answers with 4 bytes at once.
	r.at(5*time.Millisecond, func() {
		r.l.Send(AtoB, tcpPkt(ipA, ipB, aPort, bPort, iss+1, irs+1, flagACK, 0))
		r.l.Send(AtoB, dataAB(iss+1, 4))
	})
	r.at(7*time.Millisecond, func() {
		r.l.Send(BtoA, tcpPkt(ipB, ipA, bPort, aPort, irs+1, iss+5, flagACK, 4))
	})
	r.run(10 * time.Millisecond)
	if st := r.l.Stats(); st[AtoB].ACKsHeld+st[BtoA].ACKsHeld != 0 {
		t.Fatalf("setup held ACKs: %+v", st)
	}
	return r
}

func TestDelayedACKHeldFor40ms(t *testing.T) {
	r := interactiveRig(t)
	n0 := len(r.arrivals())
	// 4 more bytes reach B at 21ms; B ACKs at once; the link holds it.
	r.at(20*time.Millisecond, func() { r.l.Send(AtoB, dataAB(iss+5, 4)) })
	r.at(21500*time.Microsecond, func() { r.l.Send(BtoA, ackBA(iss+9)) })
	r.run(200 * time.Millisecond)
	got := r.arrivals()[n0:]
	if len(got) != 2 {
		t.Fatalf("got %d deliveries, want data then ACK", len(got))
	}
	if got[1].dir != BtoA || got[1].at != 62500*time.Microsecond {
		t.Errorf("ACK arrived at %v on %v; want 62.5ms (held 40ms from 21.5ms, +1ms delay) on b>a", got[1].at, got[1].dir)
	}
	st := r.l.Stats()[BtoA]
	if st.ACKsHeld != 1 || st.ACKsReleased != 1 || st.HoldTime != 40*time.Millisecond {
		t.Errorf("stats held %d released %d hold time %v; want 1, 1, 40ms", st.ACKsHeld, st.ACKsReleased, st.HoldTime)
	}
}

func TestDelayedACKSupersededByPiggyback(t *testing.T) {
	r := interactiveRig(t)
	n0 := len(r.arrivals())
	r.at(20*time.Millisecond, func() { r.l.Send(AtoB, dataAB(iss+5, 4)) })
	r.at(21500*time.Microsecond, func() { r.l.Send(BtoA, ackBA(iss+9)) })
	// B replies with data 5ms later: the reply carries the ACK.
	r.at(26*time.Millisecond, func() {
		r.l.Send(BtoA, tcpPkt(ipB, ipA, bPort, aPort, irs+5, iss+9, flagACK, 8))
	})
	r.run(200 * time.Millisecond)
	got := r.arrivals()[n0:]
	if len(got) != 2 || got[1].n != 48 || got[1].at != 27*time.Millisecond {
		t.Fatalf("deliveries %+v; want the data, then only B's reply at 27ms", got)
	}
	st := r.l.Stats()[BtoA]
	if st.ACKsHeld != 1 || st.ACKsSuperseded != 1 || st.ACKsReleased != 0 {
		t.Errorf("held %d superseded %d released %d; want 1, 1, 0", st.ACKsHeld, st.ACKsSuperseded, st.ACKsReleased)
	}
}

func TestDelayedACKSecondFullSegmentReleasesAtOnce(t *testing.T) {
	r := interactiveRig(t)
	n0 := len(r.arrivals())
	seq := uint32(iss + 5)
	r.at(20*time.Millisecond, func() { r.l.Send(AtoB, dataAB(seq, mss)) })
	r.at(21500*time.Microsecond, func() { r.l.Send(BtoA, ackBA(seq+mss)) }) // held
	r.at(22*time.Millisecond, func() { r.l.Send(AtoB, dataAB(seq+mss, mss)) })
	r.at(23500*time.Microsecond, func() { r.l.Send(BtoA, ackBA(seq+2*mss)) }) // two full segments: at once
	r.run(200 * time.Millisecond)
	var acks []arrival
	for _, a := range r.arrivals()[n0:] {
		if a.dir == BtoA {
			acks = append(acks, a)
		}
	}
	if len(acks) != 1 || acks[0].at != 24500*time.Microsecond {
		t.Fatalf("ACKs delivered %+v; want exactly one at 24.5ms", acks)
	}
	if got := binary.BigEndian.Uint32(acks[0].b[28:32]); got != seq+2*mss {
		t.Errorf("delivered ACK number %d, want %d", got, seq+2*mss)
	}
	st := r.l.Stats()[BtoA]
	if st.ACKsHeld != 1 || st.ACKsSuperseded != 1 || st.MaxHoldTime != 2*time.Millisecond {
		t.Errorf("held %d superseded %d max hold %v; want 1, 1, 2ms", st.ACKsHeld, st.ACKsSuperseded, st.MaxHoldTime)
	}
}

func TestDelayedACKPassesHandshakeQuickAndSACK(t *testing.T) {
	r := newRig(t, Config{DelayedACK: 40 * time.Millisecond})
	r.at(0, func() { handshake(r) })
	// Not interactive: quick-ACK mode lets the first ACKs through.
	r.at(time.Millisecond, func() {
		r.l.Send(AtoB, dataAB(iss+1, 100))
		r.l.Send(BtoA, ackBA(iss+101))
		// An ACK carrying a SACK block (out-of-order data) always passes.
		r.l.Send(BtoA, tcpPkt(ipB, ipA, bPort, aPort, irs+1, iss+101, flagACK, 0, 1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2))
	})
	r.run(time.Second)
	if st := r.l.Stats()[BtoA]; st.ACKsHeld != 0 || st.Packets != 3 {
		t.Errorf("held %d, delivered %d; want 0 held and 3 delivered", st.ACKsHeld, st.Packets)
	}
}

func TestCloseDropsInFlight(t *testing.T) {
	r := newRig(t, Config{Delay: time.Second})
	r.at(0, func() { r.l.Send(AtoB, rawPkt(100)); r.l.Send(BtoA, rawPkt(100)) })
	r.run(time.Millisecond)
	r.l.Close()
	r.l.Close()
	r.l.Send(AtoB, rawPkt(100))
	r.run(3 * time.Second)
	st := r.l.Stats()
	if len(r.arrivals()) != 0 || st[AtoB].Drops[DropClosed] != 2 || st[BtoA].Drops[DropClosed] != 1 {
		t.Errorf("after Close: %d delivered, drops %v / %v", len(r.arrivals()), st[AtoB].Drops, st[BtoA].Drops)
	}
}

func TestValidate(t *testing.T) {
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Delay: -time.Millisecond}, "Delay is -1ms"},
		{Config{Rate: -1}, "Rate is -1"},
		{Config{Rate: nan()}, "Rate is NaN"},
		{Config{Qdisc: Qdisc{Limit: -1}}, "Qdisc.Limit is -1"},
		{Config{Qdisc: Qdisc{LimitBytes: 100}}, "Qdisc.LimitBytes is 100"},
		{Config{MTU: 20}, "MTU is 20"},
		{Config{DelayedACK: -1}, "DelayedACK is -1ns"},
	}
	for _, c := range bad {
		err := c.cfg.Validate()
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v; want an error containing %q", c.cfg, err, c.want)
		}
		if _, err := New(c.cfg, clock.Real{}, func(Dir, []byte) {}); err == nil {
			t.Errorf("New accepted %+v", c.cfg)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}

// Connections that end with FINs or a RST leave no delayed-ACK state, and
// a RST discards an ACK held for its connection.
func TestFlowStateFreed(t *testing.T) {
	r := newRig(t, Config{DelayedACK: 40 * time.Millisecond, Delay: time.Millisecond})
	r.at(0, func() {
		for i := range 50 {
			p := uint16(2000 + i)
			r.l.Send(AtoB, tcpPkt(ipA, ipB, p, bPort, iss, 0, flagSYN, 0))
			r.l.Send(BtoA, tcpPkt(ipB, ipA, bPort, p, irs, iss+1, flagSYN|flagACK, 0))
		}
	})
	r.at(5*time.Millisecond, func() {
		for i := range 50 {
			p := uint16(2000 + i)
			r.l.Send(AtoB, tcpPkt(ipA, ipB, p, bPort, iss+1, irs+1, flagFIN|flagACK, 0))
			r.l.Send(BtoA, tcpPkt(ipB, ipA, bPort, p, irs+1, iss+2, flagFIN|flagACK, 0))
		}
	})
	r.run(100 * time.Millisecond)
	r.l.mu.Lock()
	n := len(r.l.flows)
	r.l.mu.Unlock()
	if n != 0 {
		t.Errorf("%d flows remembered after 50 connections closed; want 0", n)
	}

	h := interactiveRig(t)
	h.at(20*time.Millisecond, func() { h.l.Send(AtoB, dataAB(iss+5, 4)) })
	h.at(21500*time.Microsecond, func() { h.l.Send(BtoA, ackBA(iss+9)) }) // held
	h.at(25*time.Millisecond, func() { h.l.Send(AtoB, tcpPkt(ipA, ipB, aPort, bPort, iss+9, irs+5, flagRST, 0)) })
	h.run(200 * time.Millisecond)
	st := h.l.Stats()[BtoA]
	if st.ACKsHeld != 1 || st.ACKsReleased != 0 || st.ACKsSuperseded != 1 {
		t.Errorf("after a RST: held %d, released %d, superseded %d; want 1, 0, 1", st.ACKsHeld, st.ACKsReleased, st.ACKsSuperseded)
	}
}

// With KeepOrder, noise keeps packets in order without adding up: a
// train of packets 12 µs apart through a link whose jitter would
// reorder them arrives each about the node's noise after its place in
// line, not ever later.
func TestNoiseWithKeepOrderDoesNotAddUp(t *testing.T) {
	r := newRig(t, Config{Delay: 10 * time.Millisecond, Jitter: time.Millisecond, KeepOrder: true, Noise: DefaultNoise, Seed: 3})
	const n = 2000
	for i := range n {
		r.at(time.Duration(i)*12*time.Microsecond, func() { r.l.Send(AtoB, rawPkt(100)) })
	}
	r.run(time.Second)
	got := r.arrivals()
	if len(got) != n {
		t.Fatalf("delivered %d packets, want %d", len(got), n)
	}
	// The last packet leaves at 23.988 ms; its delay is at most 11 ms
	// of delay and jitter, plus a few draws of noise.
	if last := got[n-1].at; last > 24*time.Millisecond+11*time.Millisecond+time.Millisecond {
		t.Errorf("the last of %d packets 12 µs apart arrived at %v; want within 36 ms (noise must not add up)", n, last)
	}
}

// ParseNoise reads what Noise.String writes, with "us" for "µs" too,
// and refuses anything else with the form it wants.
func TestParseNoise(t *testing.T) {
	for _, n := range []Noise{DefaultNoise, {}, {Base: 32 * time.Microsecond, Spread: 46 * time.Microsecond}, {Spread: time.Millisecond}} {
		got, err := ParseNoise(n.String())
		if err != nil || got != n {
			t.Errorf("ParseNoise(%q) = %v, %v; want %v", n.String(), got, err, n)
		}
	}
	for _, s := range []string{"32us+exp(46us)", "32us,46us", "32µs,46µs"} {
		if got, err := ParseNoise(s); err != nil || got != (Noise{Base: 32 * time.Microsecond, Spread: 46 * time.Microsecond}) {
			t.Errorf("ParseNoise(%q) = %v, %v; want 32µs+exp(46µs)", s, got, err)
		}
	}
	for _, s := range []string{"", "25µs", "25µs+exp(30µs", "exp(30µs)", "x+exp(30µs)", "25µs+exp(y)", "-1µs+exp(30µs)", "2s+exp(1µs)", "25us,", ",30us", "1,2"} {
		if _, err := ParseNoise(s); err == nil || !strings.Contains(err.Error(), "noise") {
			t.Errorf("ParseNoise(%q): %v; want an error naming the noise", s, err)
		}
	}
}
