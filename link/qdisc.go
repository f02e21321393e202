package link

import (
	"fmt"
	"strings"
	"time"
)

// The queue discipline stage: what holds packets in front of the
// serializer, and which one goes next when the serializer is free.
// Every discipline sits behind the discipline interface (queue.go); a new
// one is a file that implements it and registers its kind, and one line
// naming the kind below. package link/tc reads and writes them in tc's
// grammar.

// QdiscKind names a queue discipline.
type QdiscKind uint8

// The queue disciplines. Each is registered by the file that implements
// it.
const (
	// FIFO is the drop-tail queue, tc's pfifo and bfifo in one, bounded
	// by Qdisc.Limit packets and Qdisc.LimitBytes bytes (fifo.go): the
	// zero value.
	FIFO QdiscKind = iota
	// CoDel is RFC 8289's controlled delay, as Linux's sch_codel
	// (codel.go).
	CoDel
	// FQCoDel is RFC 8290's flow queueing with CoDel per flow, as
	// Linux's sch_fq_codel (fqcodel.go).
	FQCoDel
	// PFIFOHeadDrop is tc's pfifo_head_drop: a FIFO that, full, drops its
	// oldest packet to take the new one (headdrop.go).
	PFIFOHeadDrop
	numQdiscKinds
)

// qdiscKind is what the link knows of a discipline: registered once per
// kind by the discipline's file.
type qdiscKind struct {
	name string
	// fields are the Qdisc fields the discipline reads, besides Kind, in
	// the order tc writes their options.
	fields []string
	// limit is the default Limit, in packets.
	limit int
	// ahead: enqueue passes every packet it accepts straight to the
	// serializer (the discipline fixes each packet's turn and fate when
	// it arrives), so the link needs no timer to serve it.
	ahead bool
	new   func(l *Link, d *direction, q Qdisc) discipline
}

var qdiscKinds [numQdiscKinds]qdiscKind

// registerQdisc records kind k; each discipline's file calls it from init.
func registerQdisc(k QdiscKind, info qdiscKind) { qdiscKinds[k] = info }

// Count is the number of queue disciplines: they are 0 to Count()-1.
func (QdiscKind) Count() QdiscKind { return numQdiscKinds }

// String is the discipline's name in tc's grammar: fifo, codel, fq_codel,
// pfifo_head_drop.
func (k QdiscKind) String() string {
	if k < numQdiscKinds {
		return qdiscKinds[k].name
	}
	return "unknown"
}

// Fields names the Qdisc fields kind k reads, besides Kind, in the order
// tc writes their options: "Limit", "Target", "ECN", ...
func (k QdiscKind) Fields() []string {
	if k < numQdiscKinds {
		return qdiscKinds[k].fields
	}
	return nil
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

// Defaults of the queue disciplines: netem's limit for the FIFO, Linux's
// for the others (sch_codel.c, sch_fq_codel.c, codel_params_init,
// sch_fifo.c's pfifo_head_drop, whose default is the device's queue
// length, 1000 on Ethernet).
const (
	DefaultQueuePackets    = 1000 // netem's default limit
	DefaultCoDelLimit      = 1000
	DefaultFQCoDelLimit    = 10240
	DefaultHeadDropLimit   = 1000
	DefaultTarget          = 5 * time.Millisecond
	DefaultInterval        = 100 * time.Millisecond
	DefaultFlows           = 1024
	DefaultMemoryLimit     = 32 << 20
	DefaultDropBatch       = 64
	MaxFlows               = 65536 // Linux's limit on flows
	MinQuantum, MaxQuantum = 256, 1 << 20
	MaxCoDelTime           = time.Minute // target and interval at most: CoDel's clock compares modulo 2^32 µs-ticks
	MaxQdiscLimit          = 1 << 24
	MaxMemoryLimit         = 1 << 31 // Linux caps memory_limit at 2^31 bytes
)

// Qdisc is the queue discipline of a direction. Its zero value is the
// drop-tail FIFO of 1000 packets. Zero fields mean the discipline's
// defaults; a discipline reads only its own fields (QdiscKind.Fields).
// package link/tc reads and writes it in tc's grammar.
type Qdisc struct {
	Kind QdiscKind

	// Limit bounds the packets in the discipline. For the FIFO it counts
	// the packets accepted and not yet fully serialized, the one on the
	// wire included, as netem's limit does, and a packet arriving at a
	// full FIFO is dropped (DropQueueFull); 0 means 1000, also when
	// LimitBytes is set. For the others it counts the packets waiting,
	// not the one being serialized: codel drops the arrival
	// (DropOverlimit), fq_codel its fattest flow's oldest, pfifo_head_drop
	// its own oldest; 0 means 1000 for codel and pfifo_head_drop, 10240
	// for fq_codel.
	Limit int

	// LimitBytes bounds the FIFO's packets by their total size, as tc's
	// bfifo does; at least the MTU. 0 means no byte bound. FIFO only.
	LimitBytes int

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

// withDefaults fills in the discipline's defaults; mtu is the link's.
func (q Qdisc) withDefaults(mtu int) Qdisc {
	if q.Kind >= numQdiscKinds {
		return q
	}
	if q.Limit == 0 {
		q.Limit = qdiscKinds[q.Kind].limit
	}
	if q.Kind != CoDel && q.Kind != FQCoDel {
		return q
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

// validate reports the first field out of range, or set for a discipline
// that does not read it; where prefixes the field names ("BtoA."), mtu is
// the link's.
func (q Qdisc) validate(where string, mtu int) error {
	f := where + "Qdisc."
	if q.Kind >= numQdiscKinds {
		names := make([]string, numQdiscKinds)
		for k := range numQdiscKinds {
			names[k] = k.String()
		}
		return fmt.Errorf("link: %sKind is %d; want one of %s", f, q.Kind, strings.Join(names, ", "))
	}
	for _, s := range []struct {
		name string
		set  bool
	}{{"Limit", q.Limit != 0}, {"LimitBytes", q.LimitBytes != 0}, {"Target", q.Target != 0}, {"Interval", q.Interval != 0},
		{"ECN", q.ECN != ECNDefault}, {"Flows", q.Flows != 0}, {"Quantum", q.Quantum != 0}, {"MemoryLimit", q.MemoryLimit != 0}, {"DropBatch", q.DropBatch != 0}} {
		if s.set && !q.Kind.reads(s.name) {
			return fmt.Errorf("link: %s%s is set, but %s has no such parameter; it reads %s", f, s.name, q.Kind, strings.Join(q.Kind.Fields(), ", "))
		}
	}
	switch {
	case q.Limit < 0 || q.Limit > MaxQdiscLimit:
		return fmt.Errorf("link: %sLimit is %d; want 1 to %d packets (0 means the default)", f, q.Limit, MaxQdiscLimit)
	case q.LimitBytes < 0:
		return fmt.Errorf("link: %sLimitBytes is %d; want at least one packet's size in bytes (0 means no byte limit)", f, q.LimitBytes)
	case q.LimitBytes > 0 && q.LimitBytes < mtu:
		return fmt.Errorf("link: %sLimitBytes is %d; want at least the MTU (%d bytes) so that a full-sized packet fits", f, q.LimitBytes, mtu)
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
	case q.MemoryLimit < 0 || q.MemoryLimit > MaxMemoryLimit:
		return fmt.Errorf("link: %sMemoryLimit is %d; want 1 to %d bytes (0 means 32 MiB)", f, q.MemoryLimit, MaxMemoryLimit)
	case q.DropBatch < 0 || q.DropBatch > MaxQdiscLimit:
		return fmt.Errorf("link: %sDropBatch is %d; want 1 to %d packets (0 means %d)", f, q.DropBatch, MaxQdiscLimit, DefaultDropBatch)
	}
	return nil
}

// reads reports whether kind k reads the Qdisc field called name.
func (k QdiscKind) reads(name string) bool {
	for _, f := range qdiscKinds[k].fields {
		if f == name {
			return true
		}
	}
	return false
}
