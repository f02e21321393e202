package explain

import (
	"sort"
	"time"
)

// Loss recovery, as the link sees it.
//
// A loss is a data segment the link dropped, or corrupted so that its
// receiver discarded it. From that instant until its sender hears an ACK
// that covers it, the loss holds the transfer back: that interval is the
// loss's recovery, claimed by the way the segment was repaired, which is
// the way the retransmission that got through was sent. The link tells
// those ways apart from what a sender can know, not from how one TCP is
// written, so the rules hold for gVisor's TCP, netemu's and the kernel's:
//
//   - A sender can take a segment for lost only once it has heard that a
//     segment sent after it arrived (an ACK or a SACK block covering it):
//     duplicate ACKs, SACK and RACK (RFC 8985) all work so. The link keeps
//     each outstanding segment's last sending, in the order they left, and
//     what the sender has heard, so it knows whether such news had reached
//     the sender when a retransmission left.
//   - A retransmission that leaves at the instant a packet arrives is that
//     packet's doing, and so is one that leaves, on such news, within the
//     sender's smoothed round trip of the last packet it heard (RACK's
//     reordering timer waits at most that long): fast retransmit or RACK.
//   - Any other retransmission is a timer's: a tail-loss probe if the
//     sender could probe (both SYNs offered SACK, no SACKed data
//     outstanding, not in recovery, no probe outstanding: the conditions
//     under which all three TCPs arm the probe timer rather than the
//     retransmission timer) and it sent its last segment again; otherwise
//     a retransmission timeout (which resends the first). A new segment
//     sent after a silence of a round trip, with data outstanding, when
//     the sender could probe, is a probe too, one that carries new data.
//   - After a probe or a timeout the sender is in that recovery until what
//     it had sent is acknowledged: the retransmissions that follow, at
//     ACKs, belong to it.
//   - Without SACK the link cannot see which segment an ACK's news is
//     about: a retransmission within a round trip of the last packet heard
//     is fast retransmit, a later one a timer's.
//
// The silence before a probe or a timeout (since the sender last heard
// anything) is claimed too, lost or not: a lost ACK costs the same wait.
// The round trip is measured on the link one segment at a time, as TCP
// times it (never across a retransmission), starting with the handshake.
//
// What cannot be told apart, and is said so (Loss.Unsure): a lone segment
// sent again after the ACK that ended a recovery, with nothing sent since
// (gVisor arms its probe timer at that ACK, Linux and netemu's TCP their
// retransmission timer, and both resend the same segment), and timers
// of a connection whose handshake the link did not see; both count as
// timeouts. Where gVisor's TCP strays from what a sender can know, the
// link reads it as the rule says: a timeout that fires within a round
// trip of news it did not act on (it recovers only after three duplicate
// ACKs, or as many SACKed segments) counts as RACK, and a segment its
// RACK sends again with no news the link saw counts as a timeout. A loss inside a host leaves a
// retransmission that repairs nothing the link lost (Loss.Unneeded). The
// smaller congestion window each recovery leaves costs time afterwards
// that stays in the round trips: explain counts the recoveries
// (Loss.Episodes) but cannot separate that cost.

// maxHoles and maxSegs bound the losses and outstanding segments
// remembered per flow.
const (
	maxHoles = 4096
	maxSegs  = 1 << 16
)

// recovery is a flow's sender as loss recovery sees it.
type recovery struct {
	synSeen, synSACK bool // its SYN was seen; it offered SACK

	unaSet   bool
	una      uint32 // highest cumulative ACK its sender heard
	sacked   bool   // its sender holds SACKed data above una
	sackHigh uint32

	sends     uint64 // segments sent, the order of a sending
	segs      []seg  // outstanding segments, in sequence order
	heardNews bool
	news      uint64 // the latest sending the sender has heard arrived

	timing   bool // a segment is being timed
	timedEnd uint32
	timedAt  time.Duration
	srtt     time.Duration // 0 until the first sample

	ep       episode
	ended    time.Duration // when the last episode ended
	lastSend time.Duration // the sender's last segment
	tlp      bool          // a probe is outstanding, until una reaches tlpHigh
	// tlpHigh is the sequence number after what was sent when it left.
	tlpHigh uint32

	holes []hole // losses not yet acknowledged
}

// seg is an outstanding segment: its bytes and its last sending.
type seg struct {
	seq, end uint32
	sent     uint64 // recovery.sends when it last left
	sacked   bool
}

// episode is a recovery under way: until una reaches until, the
// retransmissions sent at ACKs are kind's.
type episode struct {
	on      bool
	kind    Category
	until   uint32
	counted bool // counted in Loss.Episodes
}

// hole is one lost segment's bytes.
type hole struct {
	seq, end uint32
	at       time.Duration // when it was lost
	retx     int           // retransmissions sent over it
	lastKind Category      // the kind of the latest
	pending  []Category    // kinds of the retransmissions on the way, in order
	repaired bool          // a retransmission got through
	repair   Category      // the first that did
	healed   bool          // a copy got through before any retransmission (a duplicate)
}

func before(a, b uint32) bool { return int32(a-b) < 0 }
func after(a, b uint32) bool  { return int32(a-b) > 0 }

func (h *hole) overlaps(seq, end uint32) bool { return before(seq, h.end) && after(end, h.seq) }

// threshold is the silence after which a sender that could probe sends
// new data as a probe, and, without SACK, after which a retransmission
// is a timer's: the smoothed round trip, at most just under the minimum
// RTO.
func (rc *recovery) threshold() time.Duration {
	if rc.srtt > 0 {
		return min(rc.srtt, MinRTO*9/10)
	}
	return MinRTO * 9 / 10
}

// sack reports whether f's connection uses SACK; sure is false when the
// link did not see both SYNs.
func sack(f, rev *flow) (on, sure bool) {
	if rev == nil || !f.rec.synSeen || !rev.rec.synSeen {
		return false, false
	}
	return f.rec.synSACK && rev.rec.synSACK, true
}

// canProbe says whether the sender of f could send a tail-loss probe now.
func canProbe(f, rev *flow) (can, sure bool) {
	rc := &f.rec
	on, sure := sack(f, rev)
	return on && !rc.ep.on && !rc.sacked && !rc.tlp, sure
}

// timeFrom starts timing the segment that ends at end, sent at at,
// unless one is being timed.
func (rc *recovery) timeFrom(end uint32, at time.Duration) {
	if !rc.timing {
		rc.timing, rc.timedEnd, rc.timedAt = true, end, at
	}
}

// track keeps the new part of [seq, end), sent as the sends'th.
func (rc *recovery) track(seq, end uint32) {
	if n := len(rc.segs); n > 0 && before(seq, rc.segs[n-1].end) {
		seq = rc.segs[n-1].end // new data sent with old
	}
	if after(end, seq) && len(rc.segs) < maxSegs {
		rc.segs = append(rc.segs, seg{seq: seq, end: end, sent: rc.sends})
	}
}

// find returns the index of the first outstanding segment that ends
// after seq.
func (rc *recovery) find(seq uint32) int {
	return sort.Search(len(rc.segs), func(i int) bool { return after(rc.segs[i].end, seq) })
}

// hadNews reports whether the sender had heard, before resending the
// segment at seq, that a segment sent after that one's last sending
// arrived; known is false when the link does not know the segment.
func (rc *recovery) hadNews(seq uint32) (news, known bool) {
	i := rc.find(seq)
	if i == len(rc.segs) || after(rc.segs[i].seq, seq) {
		return false, false
	}
	return rc.heardNews && rc.news > rc.segs[i].sent, true
}

// resent records the sending of [seq, end) again.
func (rc *recovery) resent(seq, end uint32) {
	for i := rc.find(seq); i < len(rc.segs) && before(rc.segs[i].seq, end); i++ {
		rc.segs[i].sent = rc.sends
	}
}

// heard notes that the sender heard that s arrived.
func (rc *recovery) heard(s seg) {
	if !rc.heardNews || s.sent > rc.news {
		rc.news, rc.heardNews = s.sent, true
	}
}

// begin begins an episode of kind, unless one is under way; a timeout
// in another recovery begins its own (it cuts the window again).
func (a *Analyzer) begin(rc *recovery, kind Category, until uint32) {
	if rc.ep.on && (kind != Timeout || rc.ep.kind == Timeout) {
		return
	}
	rc.ep = episode{on: true, kind: kind, until: until}
	if kind == Timeout {
		rc.tlp = false
	}
	if kind != TailLossProbe { // a probe cuts the window only if a repair follows
		a.count(rc)
	}
}

// count counts the episode under way once.
func (a *Analyzer) count(rc *recovery) {
	if !rc.ep.counted {
		rc.ep.counted = true
		a.b.Loss.Episodes++
	}
}

// lost records that the link lost a data segment of f at at.
func (a *Analyzer) lost(f *flow, r packet, at time.Duration) {
	rc := &f.rec
	end := r.seq + uint32(r.len)
	if rc.unaSet && !after(end, rc.una) {
		return // acknowledged already: a copy the receiver did not need
	}
	known := false
	for i := range rc.holes {
		if h := &rc.holes[i]; h.overlaps(r.seq, end) {
			known = true
			if len(h.pending) > 0 { // a retransmission lost in its turn
				h.pending = h.pending[1:]
			}
		}
	}
	if !known && len(rc.holes) < maxHoles {
		rc.holes = append(rc.holes, hole{seq: r.seq, end: end, at: at})
	}
}

// arrived records that a data segment of f reached its receiver intact.
func (a *Analyzer) arrived(f *flow, r packet) {
	rc := &f.rec
	end := r.seq + uint32(r.len)
	for i := range rc.holes {
		h := &rc.holes[i]
		if !h.overlaps(r.seq, end) {
			continue
		}
		var kind Category
		switch {
		case len(h.pending) > 0:
			kind, h.pending = h.pending[0], h.pending[1:]
			if kind == TailLossProbe && rc.ep.on && rc.ep.kind == kind {
				a.count(rc) // a probe that repairs a loss cuts the window
			}
		case h.retx > 0:
			kind = h.lastKind
		default:
			h.healed = true
			continue
		}
		if !h.repaired {
			h.repaired, h.repair = true, kind
		}
	}
}

// acked folds an ACK that reached f's sender at at.
func (a *Analyzer) acked(f *flow, r packet, at time.Duration) {
	rc := &f.rec
	if !rc.unaSet || after(r.ack, rc.una) {
		rc.una, rc.unaSet = r.ack, true
	}
	i := 0
	for ; i < len(rc.segs) && !after(rc.segs[i].end, rc.una); i++ {
		if !rc.segs[i].sacked {
			rc.heard(rc.segs[i])
		}
	}
	rc.segs = rc.segs[i:]
	if len(rc.segs) > 0 && before(rc.segs[0].seq, rc.una) {
		rc.segs[0].seq = rc.una
	}
	for _, b := range r.sack[:r.nsack] {
		if !after(b.right, rc.una) {
			continue // a D-SACK
		}
		if !rc.sacked || after(b.right, rc.sackHigh) {
			rc.sacked, rc.sackHigh = true, b.right
		}
		for j := rc.find(b.left); j < len(rc.segs) && !after(rc.segs[j].end, b.right); j++ {
			if s := &rc.segs[j]; !s.sacked && !before(s.seq, b.left) {
				s.sacked = true
				rc.heard(*s)
			}
		}
	}
	if rc.sacked && !after(rc.sackHigh, rc.una) {
		rc.sacked = false
	}
	if rc.timing && !before(rc.una, rc.timedEnd) {
		sample := at - rc.timedAt
		if rc.srtt == 0 {
			rc.srtt = sample
		} else {
			rc.srtt += (sample - rc.srtt) / 8
		}
		rc.timing = false
	}
	if rc.ep.on && !before(rc.una, rc.ep.until) {
		rc.ep.on, rc.ended = false, at
	}
	if rc.tlp && !before(rc.una, rc.tlpHigh) {
		rc.tlp = false
	}
	n := 0
	for _, h := range rc.holes {
		if before(rc.una, h.end) {
			rc.holes[n] = h
			n++
			continue
		}
		if h.repaired && !h.healed {
			a.spans[h.repair].add(h.at, at)
			a.b.Loss.Repaired[h.repair]++
		}
	}
	clear(rc.holes[n:])
	rc.holes = rc.holes[:n]
}

// fast is the kind of a retransmission the sender's loss detection sent:
// the recovery's under way, or fast retransmit's, which begins one that
// lasts until what was sent (below maxSent) is acknowledged.
func (a *Analyzer) fast(rc *recovery, maxSent uint32) Category {
	if rc.ep.on {
		a.count(rc)
		return rc.ep.kind
	}
	a.begin(rc, FastRecovery, maxSent)
	return FastRecovery
}

// heardSince is the last instant f's sender heard anything (its first
// segment's if it never did): a timer's silence starts there.
func (f *flow) heardSince() time.Duration {
	if f.heard {
		return f.lastHeard
	}
	return f.firstSend
}

// retransmitted classifies a retransmission of f's sender at at; rev is
// the other direction, nil if unseen.
func (a *Analyzer) retransmitted(f, rev *flow, r packet, at time.Duration) {
	rc := &f.rec
	rc.sends++
	if rc.timing && before(r.seq, rc.timedEnd) {
		rc.timing = false // Karn: the ACK could be the retransmission's
	}
	since := f.heardSince()
	if r.syn {
		// Only a timeout sends a SYN again after a silence (a SYN-ACK
		// also answers a SYN that came again, at once).
		if at-since >= MinRTO*9/10 {
			a.b.Loss.Timeouts++
			a.spans[Timeout].add(since, at)
		}
		return
	}
	end := r.end()
	news, known := rc.hadNews(r.seq)
	if on, _ := sack(f, rev); !on || !known {
		news, known = true, false // no SACK to tell: the silence alone decides
	}
	// Sent at the instant a packet arrived, or on RACK's timer: RACK
	// waits at most the round trip after the news.
	fast := at == since || news && at-since < rc.threshold()
	rc.resent(r.seq, end)
	var kind Category
	switch can, sure := canProbe(f, rev); {
	case fast:
		kind = a.fast(rc, f.maxSent)
	case can && end == f.maxSent && r.seq == rc.una && f.lastHeard == rc.ended && rc.lastSend < rc.ended:
		// A lone segment sent again after the ACK that ended a recovery,
		// with nothing sent since: gVisor arms the probe timer at that
		// ACK, Linux (and netemu's TCP) the retransmission timer, and the
		// two send the same segment.
		kind = Timeout
		a.b.Loss.Timeouts++
		a.b.Loss.Unsure++
		a.spans[kind].add(since, at)
		a.begin(rc, kind, f.maxSent)
	case can && end == f.maxSent:
		kind = TailLossProbe
		a.b.Loss.Probes++
		a.spans[kind].add(since, at)
		a.begin(rc, kind, f.maxSent)
		rc.tlp, rc.tlpHigh = true, f.maxSent
	default:
		kind = Timeout
		a.b.Loss.Timeouts++
		if !sure {
			a.b.Loss.Unsure++
		}
		a.spans[kind].add(since, at)
		a.begin(rc, kind, f.maxSent)
	}
	needed := false
	for i := range rc.holes {
		if h := &rc.holes[i]; h.overlaps(r.seq, end) {
			needed = true
			h.retx++
			h.lastKind = kind
			if len(h.pending) < 8 {
				h.pending = append(h.pending, kind)
			}
		}
	}
	if !needed {
		a.b.Loss.Unneeded++
	}
	rc.lastSend = at
}

// sentNew notes a segment of new data from f's sender at at: a tail-loss
// probe if it left after a silence while the sender could probe.
func (a *Analyzer) sentNew(f, rev *flow, r packet, at time.Duration) {
	rc := &f.rec
	rc.sends++
	end := r.end()
	outstanding := rc.unaSet && before(rc.una, f.maxSent)
	if can, _ := canProbe(f, rev); can && outstanding && rc.srtt > 0 && at-f.heardSince() >= rc.threshold() {
		a.b.Loss.Probes++
		a.begin(rc, TailLossProbe, end)
		rc.tlp, rc.tlpHigh = true, end
	}
	rc.track(r.seq, end)
	rc.timeFrom(end, at)
	rc.lastSend = at
}
