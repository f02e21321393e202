package link

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"
)

// FQ-CoDel (RFC 8290) as Linux's net/sched/sch_fq_codel.c:
//
//   - a packet's flow is a hash of its IPv4 addresses, protocol and (TCP,
//     UDP, not a fragment) ports, scaled to Flows buckets
//     (reciprocal_scale). The hash is jhash_3words(dst, src^proto, ports,
//     perturbation), the one Linux's fq_codel used before it took
//     skb_get_hash; the perturbation comes from Config.Seed and the
//     direction (random.go), so the same seed gives the same buckets,
//     where Linux draws a random one at boot;
//   - deficit round robin over two lists, new flows first: a flow that
//     gets a packet while on neither list joins the new list with a
//     quantum of credit; a flow whose credit is spent moves to the tail
//     of the old list with a quantum more; a flow found empty on the new
//     list moves to the old list if that is not empty (so that a flow
//     cannot stay new by emptying each round), else it leaves the lists;
//   - CoDel per flow, with the qdisc's whole backlog as the backlog CoDel
//     compares with the MTU, as Linux passes it;
//   - over Limit packets or MemoryLimit bytes, fq_codel_drop: find the
//     flow with the most bytes, drop from its head until half its bytes
//     are gone or DropBatch packets, and add the drops to that flow's
//     CoDel count. The drops are DropOverlimit, or DropOverMemory when
//     the memory limit was the one exceeded (Linux counts those in both
//     drop_overlimit and drop_overmemory).
//
// Where netemu differs: memory is counted in IP bytes, where Linux counts
// each skb's truesize (a full-sized Ethernet frame takes about 2 KB
// there); the default quantum is the link's MTU in IP bytes, which gives
// Linux's one full-sized packet per round (its default, psched_mtu, is
// 1514 counted with the Ethernet header).

// fqFlow is one flow queue (struct fq_codel_flow).
type fqFlow struct {
	head, tail int32 // packet nodes, -1 when empty
	next, prev int32 // links in the new or old list
	list       uint8 // fqNone, fqNew or fqOld
	deficit    int32
	cv         codelVars
}

// Which list a flow is on.
const (
	fqNone uint8 = iota
	fqNew
	fqOld
)

// fqList is a doubly linked list of flows by index.
type fqList struct{ head, tail int32 }

// fqNode holds a packet in a flow's queue.
type fqNode struct {
	p    qpkt
	next int32
}

// fqCoDel is the fq_codel qdisc of one direction.
type fqCoDel struct {
	l   *Link
	d   *direction
	par codelFixed

	flows    []fqFlow
	backlogs []int // bytes per flow
	nodes    []fqNode
	freeNode int32 // free list of nodes, -1 when empty

	newFlows, oldFlows fqList
	quantum            int32
	limit, qlen        int
	bytes              int // in the queues; memory_limit bounds it (IP bytes, see above)
	memLimit           int
	dropBatch          int
	perturb            uint32

	cur int32         // the flow CoDel is dequeuing from
	at  time.Duration // the dequeue under way
}

func init() {
	target, interval, ecn := codelOptions(func(p *FQCoDelParams) *CoDelParams { return &p.CoDelParams })
	count := func(word, field string, min, max int64, unit, example string, v func(*FQCoDelParams) *int) QdiscOption {
		return paramOption(QdiscOption{Word: word, Field: field, Value: CountValue, Min: min, Max: max, Unit: unit, Example: example}, v)
	}
	registerQdisc(FQCoDel, qdiscKind{name: "fq_codel", limit: DefaultFQCoDelLimit, params: FQCoDelParams{},
		options: []QdiscOption{
			count("flows", "Flows", 1, MaxFlows, "", "1024", func(p *FQCoDelParams) *int { return &p.Flows }),
			count("quantum", "Quantum", MinQuantum, MaxQuantum, "bytes", "1500", func(p *FQCoDelParams) *int { return &p.Quantum }),
			target, interval, limitOption,
			paramOption(QdiscOption{Word: "memory_limit", Field: "MemoryLimit", Value: SizeValue, Min: 1, Max: MaxMemoryLimit, Example: "32Mb"},
				func(p *FQCoDelParams) *int { return &p.MemoryLimit }),
			ecn,
			count("drop_batch", "DropBatch", 1, MaxQdiscLimit, "", "64", func(p *FQCoDelParams) *int { return &p.DropBatch }),
		},
		new: func(l *Link, d *direction, q Qdisc) discipline { return newFQCoDel(l, d, q) }})
}

// Defaults and bounds of fq_codel's parameters: Linux's
// (sch_fq_codel.c).
const (
	DefaultFQCoDelLimit    = 10240
	DefaultFlows           = 1024
	DefaultMemoryLimit     = 32 << 20
	DefaultDropBatch       = 64
	MaxFlows               = 65536 // Linux's limit on flows
	MinQuantum, MaxQuantum = 256, 1 << 20
	MaxMemoryLimit         = 1 << 31 // Linux caps memory_limit at 2^31 bytes
)

// FQCoDelParams are fq_codel's parameters besides its Limit
// (Qdisc.Params): CoDel's, for each flow, and its own.
type FQCoDelParams struct {
	CoDelParams

	// Flows is the number of flow queues; 0 means 1024.
	Flows int
	// Quantum is the DRR quantum in bytes (IP bytes, as the link counts).
	// 0 means the link's MTU: one full-sized packet per round, as Linux's
	// default (the device's MTU plus its link header) gives.
	Quantum int
	// MemoryLimit bounds the bytes fq_codel holds; 0 means 32 MiB.
	MemoryLimit int
	// DropBatch is the most packets fq_codel drops from its fattest flow
	// at once on overflow; 0 means 64.
	DropBatch int
}

func (p FQCoDelParams) withDefaults(mtu int) QdiscParams {
	p.CoDelParams = p.CoDelParams.filled(ECNOn)
	if p.Flows == 0 {
		p.Flows = DefaultFlows
	}
	if p.Quantum == 0 {
		p.Quantum = mtu
	}
	if p.MemoryLimit == 0 {
		p.MemoryLimit = DefaultMemoryLimit
	}
	if p.DropBatch == 0 {
		p.DropBatch = DefaultDropBatch
	}
	return p
}

func (p FQCoDelParams) validate(f string, mtu int) error {
	if err := p.CoDelParams.validate(f, mtu); err != nil {
		return err
	}
	switch {
	case p.Flows < 0 || p.Flows > MaxFlows:
		return fmt.Errorf("link: %sFlows is %d; want 1 to %d (0 means %d)", f, p.Flows, MaxFlows, DefaultFlows)
	case p.Quantum != 0 && (p.Quantum < MinQuantum || p.Quantum > MaxQuantum):
		return fmt.Errorf("link: %sQuantum is %d; want %d to %d bytes (0 means the MTU)", f, p.Quantum, MinQuantum, MaxQuantum)
	case p.MemoryLimit < 0 || p.MemoryLimit > MaxMemoryLimit:
		return fmt.Errorf("link: %sMemoryLimit is %d; want 1 to %d bytes (0 means 32 MiB)", f, p.MemoryLimit, MaxMemoryLimit)
	case p.DropBatch < 0 || p.DropBatch > MaxQdiscLimit:
		return fmt.Errorf("link: %sDropBatch is %d; want 1 to %d packets (0 means %d)", f, p.DropBatch, MaxQdiscLimit, DefaultDropBatch)
	}
	return nil
}

func (f *fqCoDel) full(int, *wire) bool { return false }

// newFQCoDel makes the fq_codel of direction d; q has its defaults filled
// in.
func newFQCoDel(l *Link, d *direction, q Qdisc) *fqCoDel {
	p := q.Params.(FQCoDelParams)
	f := &fqCoDel{
		l: l, d: d, par: newCodelFixed(p.CoDelParams, l.cfg.MTU),
		flows:    make([]fqFlow, p.Flows),
		backlogs: make([]int, p.Flows),
		freeNode: -1,
		newFlows: fqList{-1, -1}, oldFlows: fqList{-1, -1},
		quantum: int32(p.Quantum), limit: q.Limit, memLimit: p.MemoryLimit, dropBatch: p.DropBatch,
		perturb: hashSeed(d.cfg.Seed, d.dir),
	}
	for i := range f.flows {
		f.flows[i] = fqFlow{head: -1, tail: -1, next: -1, prev: -1}
	}
	return f
}

// classify is fq_codel_hash: the packet's bucket.
func (f *fqCoDel) classify(b []byte) int32 {
	var src, dst, ports, proto uint32
	if len(b) >= 20 && b[0]>>4 == 4 {
		ihl := int(b[0]&0x0f) * 4
		proto = uint32(b[9])
		src, dst = binary.BigEndian.Uint32(b[12:16]), binary.BigEndian.Uint32(b[16:20])
		frag := binary.BigEndian.Uint16(b[6:8])&0x1fff != 0
		if (proto == 6 || proto == 17) && !frag && ihl >= 20 && len(b) >= ihl+4 {
			ports = binary.BigEndian.Uint32(b[ihl : ihl+4])
		}
	}
	h := jhash3(dst, src^proto, ports, f.perturb)
	return int32(uint64(h) * uint64(len(f.flows)) >> 32)
}

// jhash3 is Linux's jhash_3words (Bob Jenkins' lookup3 final mix).
func jhash3(a, b, c, initval uint32) uint32 {
	initval += 0xdeadbeef + 3<<2
	a += initval
	b += initval
	c += initval
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return c
}

// enqueue is fq_codel_enqueue.
func (f *fqCoDel) enqueue(p qpkt, now time.Duration) bool {
	f.add(p, now)
	return false
}

func (f *fqCoDel) add(p qpkt, now time.Duration) {
	idx := f.classify(p.buf)
	fl := &f.flows[idx]
	n := f.node()
	f.nodes[n] = fqNode{p: p, next: -1}
	if fl.head < 0 {
		fl.head = n
	} else {
		f.nodes[fl.tail].next = n
	}
	fl.tail = n
	f.backlogs[idx] += len(p.buf)
	f.bytes += len(p.buf)
	if fl.list == fqNone {
		f.pushTail(&f.newFlows, idx, fqNew)
		fl.deficit = f.quantum
	}
	memoryLimited := f.bytes > f.memLimit
	f.qlen++
	if f.qlen <= f.limit && !memoryLimited {
		return
	}
	why := DropOverlimit
	if memoryLimited {
		why = DropOverMemory
	}
	f.dropFattest(why, now)
}

// dropFattest is fq_codel_drop: drop from the head of the flow with the
// largest backlog until half of it is gone, at most dropBatch packets,
// and make its CoDel count the drops.
func (f *fqCoDel) dropFattest(why DropReason, now time.Duration) {
	maxBacklog, idx := 0, 0
	for i, b := range f.backlogs {
		if b > maxBacklog {
			maxBacklog, idx = b, i
		}
	}
	threshold := maxBacklog >> 1
	fl := &f.flows[idx]
	f.cur = int32(idx)
	length, i := 0, 0
	for {
		p, _ := f.take()
		length += len(p.buf)
		f.l.qdrop(f.d, why, p, now)
		i++
		if i >= f.dropBatch || length >= threshold || fl.head < 0 {
			break
		}
	}
	fl.cv.count += uint32(i)
}

// dequeue is fq_codel_dequeue.
func (f *fqCoDel) dequeue(now time.Duration) (qpkt, bool) {
	f.at = now
	t := toCodelTime(now)
	for {
		list := &f.newFlows
		if list.head < 0 {
			list = &f.oldFlows
			if list.head < 0 {
				return qpkt{}, false
			}
		}
		idx := list.head
		fl := &f.flows[idx]
		if fl.deficit <= 0 {
			fl.deficit += f.quantum
			f.remove(list, idx)
			f.pushTail(&f.oldFlows, idx, fqOld)
			continue
		}
		f.cur = idx
		p, ok := fl.cv.dequeue(f, &f.par, t)
		if !ok {
			// an empty new flow goes through the old list once, so that
			// it cannot starve the old flows
			f.remove(list, idx)
			if list == &f.newFlows && f.oldFlows.head >= 0 {
				f.pushTail(&f.oldFlows, idx, fqOld)
			}
			continue
		}
		fl.deficit -= int32(len(p.buf))
		return p, true
	}
}

// take removes the head packet of the current flow (dequeue_func).
func (f *fqCoDel) take() (qpkt, bool) {
	fl := &f.flows[f.cur]
	n := fl.head
	if n < 0 {
		return qpkt{}, false
	}
	p := f.nodes[n].p
	fl.head = f.nodes[n].next
	if fl.head < 0 {
		fl.tail = -1
	}
	f.nodes[n] = fqNode{next: f.freeNode}
	f.freeNode = n
	f.backlogs[f.cur] -= len(p.buf)
	f.bytes -= len(p.buf)
	f.qlen--
	return p, true
}

func (f *fqCoDel) codelDrop(p qpkt) { f.l.qdrop(f.d, DropCoDel, p, f.at) }
func (f *fqCoDel) marked()          { f.d.stats.ECNMarked++ }
func (f *fqCoDel) backlog() int     { return f.bytes }
func (f *fqCoDel) len() int         { return f.qlen }

// clear forgets every packet (Close).
func (f *fqCoDel) clear() {
	for i := range f.flows {
		f.cur = int32(i)
		for f.flows[i].head >= 0 {
			f.take()
		}
	}
}

// node returns a free packet node, growing the pool when there is none.
func (f *fqCoDel) node() int32 {
	if n := f.freeNode; n >= 0 {
		f.freeNode = f.nodes[n].next
		return n
	}
	f.nodes = append(f.nodes, fqNode{})
	return int32(len(f.nodes) - 1)
}

func (f *fqCoDel) pushTail(list *fqList, idx int32, which uint8) {
	fl := &f.flows[idx]
	fl.list, fl.next, fl.prev = which, -1, list.tail
	if list.tail >= 0 {
		f.flows[list.tail].next = idx
	} else {
		list.head = idx
	}
	list.tail = idx
}

func (f *fqCoDel) remove(list *fqList, idx int32) {
	fl := &f.flows[idx]
	if fl.prev >= 0 {
		f.flows[fl.prev].next = fl.next
	} else {
		list.head = fl.next
	}
	if fl.next >= 0 {
		f.flows[fl.next].prev = fl.prev
	} else {
		list.tail = fl.prev
	}
	fl.list, fl.next, fl.prev = fqNone, -1, -1
}
