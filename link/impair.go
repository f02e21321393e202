package link

import (
	"math/rand/v2"
	"time"
)

// The impairment stages: netem's enqueue path (net/sched/sch_netem.c,
// netem_enqueue), for one direction, in netem's order:
//
//  1. duplicate: with probability Duplicate.P the packet counts twice;
//  2. loss: loss_event decides a drop; a duplicated packet that is lost
//     still goes once, a lone one is dropped (DropLoss);
//  3. the copy of a duplicated packet is enqueued first, through these
//     stages again with duplication off (it meets its own loss and
//     corruption), as netem re-enqueues it at the root qdisc;
//  4. corrupt: with probability Corrupt.P one random bit of the packet
//     is flipped;
//  5. the queue limit (here: after the outage stage, admit in link.go);
//  6. reorder: unless within ReorderGap packets of the last reordered
//     one, with probability Reorder.P the packet is sent at once, ahead
//     of the rate and the delay;
//  7. delay: Delay plus jitter drawn by tabledist (Jitter, JitterCorr,
//     Distribution), added after the rate stage's serialization.
//
// Every decision draws from the direction's generator (random.go) in this
// order, and only when its stage is on, so that turning a stage off does
// not change the others' decisions' source of randomness beyond its own
// draws. Where netemu differs: netem computes a packet's send time from
// the last one queued when it has a rate, so that with a rate jitter never
// reorders; netemu's jitter acts on the propagation after the serializer
// and reorders as netem does without a rate (KeepOrder gives netem's
// behaviour with a rate).

// impairments is the running state of one direction's stages.
type impairments struct {
	on   bool // any stage on: otherwise the path draws nothing
	rand *rand.Rand

	dup, corr, reord, delayCor crandom
	dupP, corrP, reorderP      uint32
	loss                       loss
	lossOn                     bool
	gap, counter               uint32
	jitter                     int64
	dist                       Distribution
}

func newImpairments(c Config, dir Dir) impairments {
	im := impairments{rand: newRand(c.Seed, dir)}
	im.reconfigure(c)
	return im
}

// reconfigure sets the impairments to c's, drawing from im's generator
// where it left off (Link.Reconfigure; newImpairments from its start).
func (im *impairments) reconfigure(c Config) {
	r := im.rand
	*im = impairments{rand: r, dist: c.Distribution, jitter: int64(c.Jitter)}
	// netem draws each correlated generator's first "previous" value at
	// setup; so does netemu, in a fixed order.
	im.dup, im.corr, im.reord, im.delayCor = newCrandom(c.Duplicate.Corr, r), newCrandom(c.Corrupt.Corr, r), newCrandom(c.Reorder.Corr, r), newCrandom(c.JitterCorr, r)
	im.dupP, im.corrP, im.reorderP = scaled(c.Duplicate.P), scaled(c.Corrupt.P), scaled(c.Reorder.P)
	im.loss = newLoss(c.Loss, r)
	im.lossOn = !c.Loss.IsZero()
	if c.Reorder.P > 0 {
		im.gap = uint32(max(c.ReorderGap, 1))
	}
	im.on = im.dupP > 0 || im.corrP > 0 || im.lossOn || im.gap > 0 || im.jitter > 0
}

// impaired runs pkt through duplication and loss, then admits each packet
// that goes on (link.go), corrupt decided per packet. dup says whether
// duplication applies: not to a copy. l.mu is held.
func (l *Link) impaired(d *direction, pkt []byte, now time.Duration, dup bool) {
	im := &d.impair
	if !im.on {
		l.admit(d, pkt, now, false)
		return
	}
	count := 1
	if dup && im.dupP != 0 && im.dupP >= im.dup.next(im.rand) {
		count++
	}
	if im.lossOn && im.loss.lost(im.rand) {
		count--
	}
	if count == 0 {
		l.drop(d, DropLoss, pkt, now)
		return
	}
	if count > 1 {
		d.stats.Duplicated++
		l.impaired(d, pkt, now, false)
	}
	corrupt := im.corrP != 0 && im.corrP >= im.corr.next(im.rand)
	if corrupt {
		d.stats.Corrupted++
	}
	l.admit(d, pkt, now, corrupt)
}

// corrupt flips one random bit of buf, as netem does.
func (im *impairments) corrupt(buf []byte) {
	if len(buf) > 0 {
		buf[im.rand.IntN(len(buf))] ^= 1 << im.rand.IntN(8)
	}
}

// reorder reports whether the next packet is sent ahead of the delay:
// netem's gap counter and reorder probability.
func (im *impairments) reorder() bool {
	if im.gap == 0 || im.counter < im.gap-1 || im.reorderP < im.reord.next(im.rand) {
		im.counter++
		return false
	}
	im.counter = 0
	return true
}

// delay is the packet's propagation delay: mu, or with jitter a draw of
// tabledist. It may be negative, as netem's may.
func (im *impairments) delay(mu time.Duration) time.Duration {
	if im.jitter == 0 {
		return mu
	}
	return time.Duration(tabledist(int64(mu), im.jitter, &im.delayCor, im.rand, im.dist))
}

// lateHeap is a min-heap of entries by entry.before: the packets that
// arrive out of order. push and pop allocate only to grow.
type lateHeap []entry

func (h *lateHeap) push(e entry) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].before(&s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *lateHeap) pop() entry {
	s := *h
	e := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = entry{}
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s[l].before(&s[m]) {
			m = l
		}
		if r < len(s) && s[r].before(&s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return e
}
