package link

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The queue discipline stage: what holds packets in front of the
// serializer, and which one goes next when the serializer is free.
//
// The zero Qdisc is netemu's drop-tail FIFO (Config.QueuePackets,
// Config.QueueBytes), whose departure times admit computes as packets
// arrive: a packet's place in a FIFO, and so its serialization, is known
// the moment it joins. CoDel and FQ-CoDel decide at dequeue time, from
// how long the packet at the head has waited, so with either of them the
// link holds packets in the qdisc and dequeues one at the instant the
// serializer finishes the one before (serve, in link.go): the instant
// Linux measures CoDel's sojourn time at (enqueue to dequeue). The FIFO
// keeps its own path, so that its results do not move by a nanosecond.

// QdiscKind names a queue discipline.
type QdiscKind uint8

// The queue disciplines.
const (
	// FIFO is the drop-tail queue bounded by Config.QueuePackets and
	// Config.QueueBytes: the zero value.
	FIFO QdiscKind = iota
	// CoDel is RFC 8289's controlled delay, as Linux's sch_codel.
	CoDel
	// FQCoDel is RFC 8290's flow queueing with CoDel per flow, as
	// Linux's sch_fq_codel.
	FQCoDel
	numQdiscKinds
)

func (k QdiscKind) String() string {
	switch k {
	case FIFO:
		return "fifo"
	case CoDel:
		return "codel"
	case FQCoDel:
		return "fq_codel"
	}
	return "unknown"
}

// ECNMode says whether CoDel marks ECN-capable packets instead of
// dropping them.
type ECNMode uint8

// The ECN modes. ECNDefault is Linux's default for the discipline: off
// for codel, on for fq_codel.
const (
	ECNDefault ECNMode = iota
	ECNOff
	ECNOn
)

// Defaults of the queue disciplines, Linux's (sch_codel.c, sch_fq_codel.c,
// codel_params_init).
const (
	DefaultCoDelLimit       = 1000
	DefaultFQCoDelLimit     = 10240
	DefaultTarget           = 5 * time.Millisecond
	DefaultInterval         = 100 * time.Millisecond
	DefaultFlows            = 1024
	DefaultMemoryLimit      = 32 << 20
	DefaultDropBatch        = 64
	MaxFlows                = 65536 // Linux's limit on flows
	MinQuantum, MaxQuantum  = 256, 1 << 20
	MaxCoDelTime            = time.Minute // target and interval at most: CoDel's clock compares modulo 2^32 µs-ticks
	maxQdiscLimit           = 1 << 24
	maxMemoryLimit          = 1 << 31 // Linux caps memory_limit at 2^31 bytes
	defaultQdiscDescription = "fifo, codel or fq_codel"
)

// Qdisc is the queue discipline of a direction. Its zero value is the
// drop-tail FIFO. Zero fields mean Linux's defaults; the fields of
// fq_codel (Flows, Quantum, MemoryLimit, DropBatch) are for fq_codel only.
// ParseQdisc reads it in tc's grammar and String writes it back.
type Qdisc struct {
	Kind QdiscKind

	// Limit bounds the packets in the qdisc (not counting the one being
	// serialized). A packet over it is dropped: codel drops the arrival
	// (DropOverlimit); fq_codel drops from its fattest flow. 0 means 1000
	// for codel, 10240 for fq_codel.
	Limit int

	// Target is the sojourn time CoDel tolerates, Interval how long it
	// must be exceeded before CoDel drops. 0 means 5ms and 100ms.
	Target, Interval time.Duration

	// ECN: with it on, CoDel sets CE in ECN-capable IPv4 packets instead
	// of dropping them (DirStats.ECNMarked). ECNDefault means off for
	// codel, on for fq_codel, as Linux.
	ECN ECNMode

	// Flows is the number of fq_codel's flow queues; 0 means 1024.
	Flows int
	// Quantum is fq_codel's DRR quantum in bytes (IP bytes, as the link
	// counts). 0 means the link's MTU: one full-sized packet per round,
	// as Linux's default (the device's MTU plus its link header) gives.
	Quantum int
	// MemoryLimit bounds the bytes fq_codel holds; 0 means 32 MiB.
	MemoryLimit int
	// DropBatch is the most packets fq_codel drops from its fattest flow
	// at once on overflow; 0 means 64.
	DropBatch int
}

// IsFIFO reports whether q is the drop-tail FIFO.
func (q Qdisc) IsFIFO() bool { return q.Kind == FIFO }

// withDefaults fills in Linux's defaults; mtu is the link's.
func (q Qdisc) withDefaults(mtu int) Qdisc {
	if q.Kind == FIFO {
		return q
	}
	if q.Limit == 0 {
		q.Limit = DefaultCoDelLimit
		if q.Kind == FQCoDel {
			q.Limit = DefaultFQCoDelLimit
		}
	}
	if q.Target == 0 {
		q.Target = DefaultTarget
	}
	if q.Interval == 0 {
		q.Interval = DefaultInterval
	}
	if q.ECN == ECNDefault {
		q.ECN = ECNOff
		if q.Kind == FQCoDel {
			q.ECN = ECNOn
		}
	}
	if q.Kind == FQCoDel {
		if q.Flows == 0 {
			q.Flows = DefaultFlows
		}
		if q.Quantum == 0 {
			q.Quantum = mtu
		}
		if q.MemoryLimit == 0 {
			q.MemoryLimit = DefaultMemoryLimit
		}
		if q.DropBatch == 0 {
			q.DropBatch = DefaultDropBatch
		}
	}
	return q
}

// validate reports the first field out of range; where prefixes the
// field names ("BtoA.").
func (q Qdisc) validate(where string) error {
	f := where + "Qdisc."
	switch {
	case q.Kind >= numQdiscKinds:
		return fmt.Errorf("link: %sKind is %d; want FIFO, CoDel or FQCoDel", f, q.Kind)
	case q.Kind == FIFO && q != Qdisc{}:
		return fmt.Errorf("link: %s sets parameters for the FIFO, which has none; its limits are QueuePackets and QueueBytes", strings.TrimSuffix(f, "."))
	case q.Kind != FQCoDel && (q.Flows != 0 || q.Quantum != 0 || q.MemoryLimit != 0 || q.DropBatch != 0):
		return fmt.Errorf("link: %sFlows, Quantum, MemoryLimit and DropBatch are fq_codel's; %s has none of them", f, q.Kind)
	case q.Limit < 0 || q.Limit > maxQdiscLimit:
		return fmt.Errorf("link: %sLimit is %d; want 1 to %d packets (0 means the default)", f, q.Limit, maxQdiscLimit)
	case q.Target < 0 || q.Target > MaxCoDelTime:
		return fmt.Errorf("link: %sTarget is %v; want more than 0, at most %v (0 means 5ms)", f, q.Target, MaxCoDelTime)
	case q.Interval < 0 || q.Interval > MaxCoDelTime:
		return fmt.Errorf("link: %sInterval is %v; want more than 0, at most %v (0 means 100ms)", f, q.Interval, MaxCoDelTime)
	case q.ECN > ECNOn:
		return fmt.Errorf("link: %sECN is %d; want ECNDefault, ECNOff or ECNOn", f, q.ECN)
	case q.Flows < 0 || q.Flows > MaxFlows:
		return fmt.Errorf("link: %sFlows is %d; want 1 to %d (0 means %d)", f, q.Flows, MaxFlows, DefaultFlows)
	case q.Quantum != 0 && (q.Quantum < MinQuantum || q.Quantum > MaxQuantum):
		return fmt.Errorf("link: %sQuantum is %d; want %d to %d bytes (0 means the MTU)", f, q.Quantum, MinQuantum, MaxQuantum)
	case q.MemoryLimit < 0 || q.MemoryLimit > maxMemoryLimit:
		return fmt.Errorf("link: %sMemoryLimit is %d; want 1 to %d bytes (0 means 32 MiB)", f, q.MemoryLimit, maxMemoryLimit)
	case q.DropBatch < 0 || q.DropBatch > maxQdiscLimit:
		return fmt.Errorf("link: %sDropBatch is %d; want 1 to %d packets (0 means %d)", f, q.DropBatch, maxQdiscLimit, DefaultDropBatch)
	}
	return nil
}

// ParseQdisc reads a queue discipline in tc's grammar, what follows
// "tc qdisc add dev X root":
//
//	fifo
//	codel [limit PACKETS] [target TIME] [interval TIME] [ecn|noecn]
//	fq_codel [limit PACKETS] [flows NUMBER] [quantum BYTES] [target TIME]
//	         [interval TIME] [memory_limit BYTES] [ecn|noecn] [drop_batch SIZE]
//
// Options may come in any order, each once. Times need a unit (5ms,
// 100ms, 500us), where tc reads a bare number as microseconds; limit,
// flows, quantum and drop_batch are whole numbers (C's 0x and 0
// notations too); memory_limit is a size as tc writes it (32Mb, 4Mb,
// 512Kb, 1000000: k, m and g are binary, kbit, mbit and gbit eighths
// of them). fifo is netemu's drop-tail queue, whose limits are the
// link's (--queue, Config.QueuePackets); it takes no options.
// ce_threshold is not supported and says so.
func ParseQdisc(s string) (Qdisc, error) {
	args := strings.Fields(s)
	if len(args) == 0 {
		return Qdisc{}, fmt.Errorf("qdisc %q is empty; want %s, like fq_codel or codel target 5ms interval 100ms", s, defaultQdiscDescription)
	}
	var q Qdisc
	switch args[0] {
	case "fifo":
		q.Kind = FIFO
	case "codel":
		q.Kind = CoDel
	case "fq_codel":
		q.Kind = FQCoDel
	default:
		return Qdisc{}, fmt.Errorf("qdisc %q is not one netemu has; want %s, like fq_codel or codel target 5ms", args[0], defaultQdiscDescription)
	}
	if q.Kind == FIFO && len(args) > 1 {
		return Qdisc{}, fmt.Errorf("qdisc fifo takes no options (got %q); its limit is the link's queue (--queue 1000 or --queue 150KB)", strings.Join(args[1:], " "))
	}
	seen := map[string]bool{}
	for i := 1; i < len(args); i++ {
		word := args[i]
		opt := word
		if word == "noecn" {
			opt = "ecn"
		}
		if !qdiscHasOption(q.Kind, opt) {
			if word == "ce_threshold" || word == "ce_threshold_selector" {
				return Qdisc{}, fmt.Errorf("qdisc %s: %s is not supported; netemu's CoDel marks only in place of a drop (ecn)", q.Kind, word)
			}
			return Qdisc{}, fmt.Errorf("qdisc %s: %q is not one of its options; want %s", q.Kind, word, strings.Join(qdiscOptions[q.Kind], ", "))
		}
		if seen[opt] {
			return Qdisc{}, fmt.Errorf("qdisc %s: %s is given twice; give each option once", q.Kind, opt)
		}
		seen[opt] = true
		if opt == "ecn" {
			q.ECN = ECNOn
			if word == "noecn" {
				q.ECN = ECNOff
			}
			continue
		}
		if i+1 >= len(args) {
			return Qdisc{}, fmt.Errorf("qdisc %s: %s needs a value, like %s", q.Kind, word, qdiscExample[word])
		}
		i++
		v := args[i]
		var err error
		switch opt {
		case "limit":
			q.Limit, err = qdiscCount(q.Kind, opt, v, maxQdiscLimit)
		case "flows":
			q.Flows, err = qdiscCount(q.Kind, opt, v, MaxFlows)
		case "quantum":
			q.Quantum, err = qdiscCount(q.Kind, opt, v, MaxQuantum)
			if err == nil && q.Quantum < MinQuantum || err != nil && strings.Contains(err.Error(), "out of range") {
				err = fmt.Errorf("qdisc %s: quantum %q is out of range; want %d to %d bytes, like quantum 1500", q.Kind, v, MinQuantum, MaxQuantum)
			}
		case "drop_batch":
			q.DropBatch, err = qdiscCount(q.Kind, opt, v, maxQdiscLimit)
		case "target":
			q.Target, err = qdiscTime(q.Kind, opt, v)
		case "interval":
			q.Interval, err = qdiscTime(q.Kind, opt, v)
		case "memory_limit":
			b, ok := tcSize(asciiLower(v))
			switch {
			case !ok || b != b:
				err = fmt.Errorf("qdisc %s: memory_limit %q is not a size; write it like 32Mb, 512Kb or 1000000 (bytes)", q.Kind, v)
			case b < 1 || b > maxMemoryLimit:
				err = fmt.Errorf("qdisc %s: memory_limit %q is out of range; want 1 byte to 2Gb, like memory_limit 32Mb", q.Kind, v)
			}
			q.MemoryLimit = int(b)
		}
		if err != nil {
			return Qdisc{}, err
		}
	}
	return q, nil
}

// qdiscOptions are the options of each discipline, in tc's order.
var qdiscOptions = [numQdiscKinds][]string{
	CoDel:   {"limit", "target", "interval", "ecn", "noecn"},
	FQCoDel: {"limit", "flows", "quantum", "target", "interval", "memory_limit", "ecn", "noecn", "drop_batch"},
}

var qdiscExample = map[string]string{
	"limit": "limit 1000", "flows": "flows 1024", "quantum": "quantum 1500", "drop_batch": "drop_batch 64",
	"target": "target 5ms", "interval": "interval 100ms", "memory_limit": "memory_limit 32Mb",
}

func qdiscHasOption(k QdiscKind, opt string) bool {
	for _, o := range qdiscOptions[k] {
		if o == opt {
			return true
		}
	}
	return false
}

// qdiscCount reads a whole number from 1 to max as tc's get_unsigned does.
func qdiscCount(k QdiscKind, opt, v string, max int) (int, error) {
	n, ok := cUint(v, 0)
	if !ok || strings.HasPrefix(v, "-") {
		return 0, fmt.Errorf("qdisc %s: %s %q is not a whole number; write it like %s", k, opt, v, qdiscExample[opt])
	}
	if n < 1 || n > uint64(max) {
		return 0, fmt.Errorf("qdisc %s: %s %q is out of range; want 1 to %d, like %s", k, opt, v, max, qdiscExample[opt])
	}
	return int(n), nil
}

// qdiscTime reads a time as tc's get_time does, with a unit required,
// more than 0 and at most MaxCoDelTime.
func qdiscTime(k QdiscKind, opt, v string) (time.Duration, error) {
	p := &netemParser{args: []string{v}}
	d, err := p.time(opt, MaxCoDelTime, "the longest CoDel's clock compares")
	if err != nil {
		return 0, fmt.Errorf("qdisc %s: %s", k, strings.TrimPrefix(err.Error(), "netem: "))
	}
	if d <= 0 {
		return 0, fmt.Errorf("qdisc %s: %s %q would be no time at all; want more than 0, like %s", k, opt, v, qdiscExample[opt])
	}
	return d, nil
}

// tcSize reads a size as tc's get_size does: a number, with an optional
// unit (case already lowered): b; k, kb, m, mb, g, gb (binary); kbit,
// mbit, gbit (binary, in bits).
func tcSize(t string) (float64, bool) {
	if v, ok := cFloat(t); ok {
		return v, true
	}
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"kbit", 1024 / 8}, {"mbit", 1024 * 1024 / 8}, {"gbit", 1024 * 1024 * 1024 / 8},
		{"kb", 1024}, {"mb", 1024 * 1024}, {"gb", 1024 * 1024 * 1024}, {"k", 1024}, {"m", 1024 * 1024}, {"g", 1024 * 1024 * 1024}, {"b", 1}} {
		if num, cut := strings.CutSuffix(t, u.suffix); cut {
			if v, ok := cFloat(num); ok {
				return v * u.mult, true
			}
		}
	}
	return 0, false
}

// String writes q in tc's grammar, each option only when it is set
// (not zero), in the order of the issue that asked for it (tc's own
// "qdisc show" order), so that ParseQdisc reads q back exactly:
//
//	fifo
//	codel target 5ms interval 100ms limit 1000 ecn
//	fq_codel flows 1024 quantum 1514 target 5ms interval 100ms limit 10240 memory_limit 32Mb ecn drop_batch 64
func (q Qdisc) String() string {
	w := []string{q.Kind.String()}
	add := func(s ...string) { w = append(w, s...) }
	if q.Flows != 0 {
		add("flows", strconv.Itoa(q.Flows))
	}
	if q.Quantum != 0 {
		add("quantum", strconv.Itoa(q.Quantum))
	}
	if q.Target != 0 {
		add("target", netemTime(q.Target))
	}
	if q.Interval != 0 {
		add("interval", netemTime(q.Interval))
	}
	if q.Limit != 0 {
		add("limit", strconv.Itoa(q.Limit))
	}
	if q.MemoryLimit != 0 {
		add("memory_limit", tcSizeString(q.MemoryLimit))
	}
	switch q.ECN {
	case ECNOn:
		add("ecn")
	case ECNOff:
		add("noecn")
	}
	if q.DropBatch != 0 {
		add("drop_batch", strconv.Itoa(q.DropBatch))
	}
	return strings.Join(w, " ")
}

// tcSizeString writes n bytes as tc prints sizes, exactly: 32Mb, 512Kb,
// or a bare byte count.
func tcSizeString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "Mb"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "Kb"
	}
	return strconv.Itoa(n)
}

// qdisc is a queue discipline that decides at dequeue time: codel or
// fq_codel. Its methods run with the link's lock held; drops go through
// Link.qdrop.
type qdisc interface {
	enqueue(p qpkt, now time.Duration)
	// dequeue returns the next packet to serialize at now, if any.
	dequeue(now time.Duration) (qpkt, bool)
	len() int // packets held
	clear()   // forget every packet (Close)
}

func newQdisc(l *Link, d *direction, q Qdisc) qdisc {
	if q.Kind == CoDel {
		return newCodelQueue(l, d, q)
	}
	return newFQCoDel(l, d, q)
}

// admitQdisc is admit's queue, rate and delay for a direction with a
// qdisc: pkt joins the qdisc (unless reordered: then it is sent at once,
// as with the FIFO), and the serializer takes it now if it is free.
// l.mu is held.
func (l *Link) admitQdisc(d *direction, pkt []byte, now time.Duration, corrupt bool) {
	// What the serializer took before now, if a timer ran late (only a
	// real clock's can), goes first.
	l.serve(d, now)
	buf := append(l.buffer(), pkt...)
	if corrupt {
		d.impair.corrupt(buf)
	}
	if d.impair.reorder() {
		d.stats.Reordered++
		l.schedule(d, entry{buf: buf, due: now, sent: now, front: true, corrupt: corrupt}, now)
		return
	}
	// serve left the qdisc empty or the serializer busy past now: if it
	// has been idle, it is free now.
	d.busyUntil = max(d.busyUntil, now)
	d.qd.enqueue(qpkt{buf: buf, enq: now, corrupt: corrupt}, now)
	if n := d.qd.len() + d.onWire(now); n > d.stats.PeakQueuePackets {
		d.stats.PeakQueuePackets = n
	}
	l.serve(d, now)
}

// onWire is 1 while the serializer is busy, else 0.
func (d *direction) onWire(now time.Duration) int {
	if d.busyUntil > now {
		return 1
	}
	return 0
}

// serve dequeues from d's qdisc each time the serializer is free by now,
// at the instant it became free, and sends the packet on to the rate and
// delay stages; then it sets the serve timer for the next such instant if
// packets wait. Invariant: when serve returns, either the qdisc is empty
// or the serializer is busy past now, so every packet that waits in the
// qdisc arrived while the serializer was busy, and busyUntil is the
// instant the next dequeue happens. l.mu is held.
func (l *Link) serve(d *direction, now time.Duration) {
	for d.qd.len() > 0 && d.busyUntil <= now {
		at := d.busyUntil
		p, ok := d.qd.dequeue(at)
		if !ok {
			break // CoDel dropped the rest
		}
		finish := at + d.serialization(len(p.buf))
		d.busyUntil = finish
		due := finish + max(d.impair.delay(d.cfg.Delay), 0)
		if d.cfg.KeepOrder {
			due = max(due, d.lastDue)
		}
		if l.obs != nil {
			// At is the packet's arrival in the queue, Start its dequeue:
			// the event comes at the dequeue, so At may be earlier than
			// the events before it.
			l.emit(Event{Kind: EventQueue, Dir: d.dir, At: p.enq, Packet: p.buf, Start: at, Finish: finish, Due: due, Queue: d.qd.len() + 1})
		}
		l.schedule(d, entry{buf: p.buf, due: due, sent: p.enq, corrupt: p.corrupt}, now)
	}
	if d.qd.len() > 0 {
		d.serveTimer.Reset(d.busyUntil - now)
	}
}

// serveDue is the serve timer's work. On a real clock it may run late;
// serve then dequeues at the instants the serializer became free.
func (l *Link) serveDue(d *direction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.serve(d, l.now())
	}
}

// qdrop counts and reports a packet a qdisc drops, and takes its buffer
// back. l.mu is held.
func (l *Link) qdrop(d *direction, why DropReason, p qpkt, now time.Duration) {
	l.drop(d, why, p.buf, now)
	l.free = append(l.free, p.buf[:0])
}
