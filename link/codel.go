package link

import (
	"encoding/binary"
	"fmt"
	"time"
)

func init() {
	target, interval, ecn := codelOptions(func(p *CoDelParams) *CoDelParams { return p })
	registerQdisc(CoDel, qdiscKind{name: "codel", limit: DefaultCoDelLimit, params: CoDelParams{},
		options: []QdiscOption{target, interval, limitOption, ecn},
		new:     func(l *Link, d *direction, q Qdisc) discipline { return newCodelQueue(l, d, q) }})
}

// Defaults and bounds of CoDel's parameters: Linux's (sch_codel.c,
// codel_params_init).
const (
	DefaultCoDelLimit = 1000
	DefaultTarget     = 5 * time.Millisecond
	DefaultInterval   = 100 * time.Millisecond
	MaxCoDelTime      = time.Minute // target and interval at most: CoDel's clock compares modulo 2^32 µs-ticks
)

// CoDelParams are codel's parameters besides its Limit (Qdisc.Params);
// fq_codel's hold them too (FQCoDelParams).
type CoDelParams struct {
	// Target is the sojourn time CoDel tolerates, Interval how long it
	// must be exceeded before CoDel drops. 0 means 5ms and 100ms.
	Target, Interval time.Duration

	// ECN: with it on, CoDel sets CE in ECN-capable IPv4 packets instead
	// of dropping them (DirStats.ECNMarked). ECNDefault means off for
	// codel, on for fq_codel, as Linux.
	ECN ECNMode
}

// ECNMode says whether CoDel marks ECN-capable packets instead of
// dropping them.
type ECNMode uint8

// The ECN modes. ECNDefault is Linux's default for the discipline: off
// for codel, on for fq_codel.
const (
	ECNDefault ECNMode = 0
	ECNOff     ECNMode = SwitchOff // noecn
	ECNOn      ECNMode = SwitchOn  // ecn
)

func (p CoDelParams) withDefaults(int) QdiscParams { return p.filled(ECNOff) }

// filled is p with its defaults, ecn the discipline's ECN.
func (p CoDelParams) filled(ecn ECNMode) CoDelParams {
	if p.Target == 0 {
		p.Target = DefaultTarget
	}
	if p.Interval == 0 {
		p.Interval = DefaultInterval
	}
	if p.ECN == ECNDefault {
		p.ECN = ecn
	}
	return p
}

func (p CoDelParams) validate(f string, _ int) error {
	switch {
	case p.Target < 0 || p.Target > MaxCoDelTime:
		return fmt.Errorf("link: %sTarget is %v; want more than 0, at most %v (0 means 5ms)", f, p.Target, MaxCoDelTime)
	case p.Interval < 0 || p.Interval > MaxCoDelTime:
		return fmt.Errorf("link: %sInterval is %v; want more than 0, at most %v (0 means 100ms)", f, p.Interval, MaxCoDelTime)
	case p.ECN > ECNOn:
		return fmt.Errorf("link: %sECN is %d; want ECNDefault, ECNOff or ECNOn", f, p.ECN)
	}
	return nil
}

// codelOptions are tc's words for CoDel's parameters, in a discipline
// whose parameters P hold them where codel points.
func codelOptions[P QdiscParams](codel func(*P) *CoDelParams) (target, interval, ecn QdiscOption) {
	const why = "the longest CoDel's clock compares"
	target = paramOption(QdiscOption{Word: "target", Field: "Target", Value: TimeValue, Max: int64(MaxCoDelTime), Why: why, Example: "5ms"},
		func(p *P) *time.Duration { return &codel(p).Target })
	interval = paramOption(QdiscOption{Word: "interval", Field: "Interval", Value: TimeValue, Max: int64(MaxCoDelTime), Why: why, Example: "100ms"},
		func(p *P) *time.Duration { return &codel(p).Interval })
	ecn = paramOption(QdiscOption{Word: "ecn", Off: "noecn", Field: "ECN", Value: SwitchValue},
		func(p *P) *ECNMode { return &codel(p).ECN })
	return target, interval, ecn
}

// CoDel (RFC 8289) as Linux implements it (include/net/codel.h,
// include/net/codel_impl.h, net/sched/sch_codel.c), arithmetic included:
//
//   - time is Linux's codel_time_t: nanoseconds shifted right by 10
//     (1.024 µs ticks) in 32 bits, compared modulo 2^32; a packet's
//     enqueue time and the dequeue instant are both truncated to ticks,
//     and target and interval too (5ms is 4882 ticks);
//   - the control law, interval/sqrt(count), uses Linux's reciprocal
//     square root kept in 16 bits and refined by one Newton step each
//     time count changes (codel_Newton_step, codel_control_law), not an
//     exact square root: the second drop of a drop state comes
//     interval/2 after the first, not interval/√2;
//   - a packet is "ok to drop" once now is strictly after
//     first_above_time, where the RFC's pseudocode says now >=
//     first_above_time;
//   - the RFC's MAXPACKET is the link's MTU (Linux: psched_mtu, the
//     device's MTU plus its link header; netemu counts IP bytes), and
//     CoDel never drops while the backlog left is at most that;
//   - when it enters drop state soon after leaving it, count restarts
//     from the drops of the last cycle with one Newton step from the old
//     reciprocal (the RFC's pseudocode: the same rule, exact sqrt);
//   - with ecn, an ECN-capable IPv4 packet (ECT(0), ECT(1), or already
//     CE) is marked CE instead of dropped, its header checksum updated
//     (INET_ECN_set_ce); in drop state one mark ends the dequeue, as in
//     Linux. ce_threshold is not implemented.
//
// codel_test.go checks the link's drop instants against a transcription
// of RFC 8289's pseudocode with Linux's arithmetic put in the places
// named above.

// codelTime is Linux's codel_time_t.
type codelTime uint32

const codelShift = 10

// toCodelTime is codel_get_time for an instant since the link's start.
func toCodelTime(d time.Duration) codelTime { return codelTime(uint64(d) >> codelShift) }

func (a codelTime) before(b codelTime) bool  { return int32(a-b) < 0 }
func (a codelTime) after(b codelTime) bool   { return int32(a-b) > 0 }
func (a codelTime) afterEq(b codelTime) bool { return int32(a-b) >= 0 }

// recInvSqrtShift is Linux's REC_INV_SQRT_SHIFT: the reciprocal square
// root is kept in the top 16 bits of a Q0.32 number.
const recInvSqrtShift = 32 - 16

// codelFixed are a CoDel's parameters as it runs with them, its times in
// its own ticks.
type codelFixed struct {
	target, interval codelTime
	mtu              int // backlog at or under which CoDel does not drop
	ecn              bool
}

// newCodelFixed reads p, its defaults filled in.
func newCodelFixed(p CoDelParams, mtu int) codelFixed {
	return codelFixed{target: toCodelTime(p.Target), interval: toCodelTime(p.Interval), mtu: mtu, ecn: p.ECN == ECNOn}
}

// codelVars are a CoDel's running state (struct codel_vars).
type codelVars struct {
	count, lastcount uint32
	dropping         bool
	recInvSqrt       uint16
	firstAboveTime   codelTime
	dropNext         codelTime
	ldelay           codelTime // sojourn time of the last packet dequeued
}

// newtonStep is codel_Newton_step: one Newton iteration of
// rec_inv_sqrt towards 1/sqrt(count), in Linux's fixed point, wrapping
// where Linux's unsigned arithmetic wraps.
func (v *codelVars) newtonStep() {
	invsqrt := uint32(v.recInvSqrt) << recInvSqrtShift
	invsqrt2 := uint32(uint64(invsqrt) * uint64(invsqrt) >> 32)
	val := (uint64(3) << 32) - uint64(v.count)*uint64(invsqrt2)
	val >>= 2 // avoid overflow in the next multiply
	val = (val * uint64(invsqrt)) >> (32 - 2 + 1)
	v.recInvSqrt = uint16(val >> recInvSqrtShift)
}

// controlLaw is codel_control_law: t + interval/sqrt(count), with
// Linux's reciprocal_scale.
func controlLaw(t, interval codelTime, recInvSqrt uint16) codelTime {
	return t + codelTime(uint64(interval)*uint64(uint32(recInvSqrt)<<recInvSqrtShift)>>32)
}

// codelSource is what CoDel dequeues from: the codel qdisc's queue, or
// one flow of fq_codel. take removes the head and lowers the backlog;
// drop disposes of a packet CoDel drops; backlog is the qdisc's bytes
// left (both Linux's codel and fq_codel pass the whole qdisc's).
type codelSource interface {
	take() (qpkt, bool)
	codelDrop(p qpkt)
	backlog() int
	marked()
}

// shouldDrop is codel_should_drop.
func (v *codelVars) shouldDrop(p *qpkt, ok bool, src codelSource, par *codelFixed, now codelTime) bool {
	if !ok {
		v.firstAboveTime = 0
		return false
	}
	v.ldelay = now - toCodelTime(p.enq)
	if v.ldelay.before(par.target) || src.backlog() <= par.mtu {
		// went below: stay below for at least an interval
		v.firstAboveTime = 0
		return false
	}
	if v.firstAboveTime == 0 {
		// just went above from below; if still above at first_above_time,
		// it is ok to drop
		v.firstAboveTime = now + par.interval
	} else if now.after(v.firstAboveTime) {
		return true
	}
	return false
}

// dequeue is codel_dequeue: the next packet to send from src at now,
// after the drops (or marks) CoDel decides.
func (v *codelVars) dequeue(src codelSource, par *codelFixed, now codelTime) (qpkt, bool) {
	p, ok := src.take()
	if !ok {
		v.dropping = false
		return p, false
	}
	drop := v.shouldDrop(&p, ok, src, par, now)
	if v.dropping {
		if !drop {
			// sojourn time below target: leave drop state
			v.dropping = false
		} else if now.afterEq(v.dropNext) {
			// Time for the next drop: drop this packet and dequeue the
			// next, which may end drop state; else schedule the next
			// drop. A large backlog may make it due at once, hence the
			// loop.
			for v.dropping && now.afterEq(v.dropNext) {
				v.count++
				v.newtonStep()
				if par.ecn && setCE(p.buf) {
					src.marked()
					v.dropNext = controlLaw(v.dropNext, par.interval, v.recInvSqrt)
					return p, ok
				}
				src.codelDrop(p)
				p, ok = src.take()
				if !v.shouldDrop(&p, ok, src, par, now) {
					v.dropping = false // leave drop state
				} else {
					v.dropNext = controlLaw(v.dropNext, par.interval, v.recInvSqrt)
				}
			}
		}
	} else if drop {
		if par.ecn && setCE(p.buf) {
			src.marked()
		} else {
			src.codelDrop(p)
			p, ok = src.take()
			v.shouldDrop(&p, ok, src, par, now)
		}
		v.dropping = true
		// If it went above target soon after it last went below, the
		// drop rate that controlled the queue then is a good start now.
		delta := v.count - v.lastcount
		if delta > 1 && (now - v.dropNext).before(16*par.interval) {
			v.count = delta
			v.newtonStep()
		} else {
			v.count = 1
			v.recInvSqrt = ^uint16(0) // ~0U >> REC_INV_SQRT_SHIFT
		}
		v.lastcount = v.count
		v.dropNext = controlLaw(now, par.interval, v.recInvSqrt)
	}
	return p, ok
}

// setCE marks an ECN-capable IPv4 packet Congestion Experienced and
// updates its header checksum, as Linux's IP_ECN_set_ce; it reports
// whether the packet is now CE (it was ECT(0), ECT(1) or already CE).
// Anything else is left alone.
func setCE(b []byte) bool {
	if len(b) < 20 || b[0]>>4 != 4 || int(b[0]&0x0f)*4 < 20 {
		return false
	}
	switch b[1] & 3 {
	case 0: // Not-ECT
		return false
	case 3: // CE already
		return true
	}
	// RFC 1624's incremental update: HC' = ~(~HC + ~m + m'), m the 16-bit
	// word holding the TOS byte.
	old := binary.BigEndian.Uint16(b[0:2])
	b[1] |= 3
	sum := uint32(^binary.BigEndian.Uint16(b[10:12])) + uint32(^old) + uint32(binary.BigEndian.Uint16(b[0:2]))
	sum = (sum & 0xffff) + sum>>16
	sum = (sum & 0xffff) + sum>>16
	binary.BigEndian.PutUint16(b[10:12], ^uint16(sum))
	return true
}

// codelQueue is the codel qdisc (sch_codel.c): a FIFO of packets with
// CoDel at its head, and a tail drop at Limit packets.
type codelQueue struct {
	l     *Link
	d     *direction
	par   codelFixed
	vars  codelVars
	limit int
	at    time.Duration // the dequeue under way
	q     pktRing
}

func newCodelQueue(l *Link, d *direction, q Qdisc) *codelQueue {
	return &codelQueue{l: l, d: d, par: newCodelFixed(q.Params.(CoDelParams), l.cfg.MTU), limit: q.Limit, q: newPktRing()}
}

func (q *codelQueue) full(int, *wire) bool { return false }

func (q *codelQueue) enqueue(p qpkt, now time.Duration) bool {
	q.add(p, now)
	return false
}

func (q *codelQueue) add(p qpkt, now time.Duration) {
	if q.q.n >= q.limit {
		q.l.qdrop(q.d, DropOverlimit, p, now)
		return
	}
	q.q.push(p)
}

func (q *codelQueue) dequeue(now time.Duration) (qpkt, bool) {
	q.at = now
	return q.vars.dequeue(q, &q.par, toCodelTime(now))
}

func (q *codelQueue) take() (qpkt, bool) { return q.q.pop() }

func (q *codelQueue) codelDrop(p qpkt) { q.l.qdrop(q.d, DropCoDel, p, q.at) }
func (q *codelQueue) marked()          { q.d.stats.ECNMarked++ }
func (q *codelQueue) backlog() int     { return q.q.size }
func (q *codelQueue) len() int         { return q.q.n }
func (q *codelQueue) clear()           { q.q.clear() }
