// Package explain says where the time of a run went, from the events of
// its link: handshakes, request round trips, serialization, delayed-ACK
// holds and retransmission timeouts, and, for small writes, which ACKs
// were held and which segments waited for them.
package explain

import (
	"encoding/binary"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/netemu/netemu/link"
)

// Record is a link event with the packet's headers decoded.
type Record struct {
	link.Event
	Size int
	TCP  bool
	Src  netip.AddrPort
	Dst  netip.AddrPort
	Seq  uint32
	Ack  uint32
	SYN  bool
	FIN  bool
	RST  bool
	Len  int // TCP payload bytes
}

// Recorder keeps every event of a link. Its Observe method is a
// link.Observer. It is safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	recs []Record
}

// Observe records e.
func (r *Recorder) Observe(e link.Event) {
	rec := Record{Event: e, Size: len(e.Packet)}
	rec.Packet = nil
	decode(e.Packet, &rec)
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

// Since converts an instant of the run's clock to link time (what
// Analyze takes), using the first event recorded; zero before any.
func (r *Recorder) Since(t time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.recs) == 0 {
		return 0
	}
	first := r.recs[0]
	return t.Sub(first.Time.Add(-first.At))
}

// Records returns the events so far.
func (r *Recorder) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.recs...)
}

func decode(b []byte, r *Record) {
	if len(b) < 20 || b[0]>>4 != 4 || b[9] != 6 {
		return
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if ihl < 20 || total > len(b) || total < ihl+20 {
		return
	}
	t := b[ihl:total]
	off := int(t[12]>>4) * 4
	if off < 20 || off > len(t) {
		return
	}
	r.TCP = true
	r.Src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[12:16])), binary.BigEndian.Uint16(t[0:2]))
	r.Dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[16:20])), binary.BigEndian.Uint16(t[2:4]))
	r.Seq = binary.BigEndian.Uint32(t[4:8])
	r.Ack = binary.BigEndian.Uint32(t[8:12])
	r.FIN, r.SYN, r.RST = t[13]&1 != 0, t[13]&2 != 0, t[13]&4 != 0
	r.Len = len(t) - off
}

// Category is a kind of time in a breakdown.
type Category int

// Categories, in the order they claim an instant: if the wire is busy the
// instant is serialization even if an ACK is also held.
const (
	Serialization Category = iota // a packet is being put on the wire
	Handshake                     // only connection set-up packets are propagating
	RoundTrip                     // packets are propagating (requests, responses, ACKs)
	DelayedACK                    // nothing moves but an ACK held by a delayed-ACK timer
	Timeout                       // nothing moves until a retransmission timeout fires
	Other                         // none of these: endpoints working or waiting
	numCategories
)

func (c Category) String() string {
	return [...]string{"serialization", "handshake round trips", "request round trips", "delayed-ACK holds", "retransmission timeouts", "other (endpoints)"}[c]
}

// Hold is one held ACK.
type Hold struct {
	At       time.Duration // when the receiver sent it
	Held     time.Duration
	From     netip.AddrPort // the receiver that sent the ACK
	Released bool           // by the timer; false: superseded by a newer ACK
}

// Waiting is a data segment that left the instant a pure ACK arrived, with
// no data arriving for the application to answer at that instant: held
// back by Nagle's algorithm (or a full window) until the ACK came.
type Waiting struct {
	At     time.Duration // when it was sent
	Waited time.Duration // since the previous segment of the flow was sent
	From   netip.AddrPort
	Len    int
}

// Breakdown is where the time between From and To went. The categories
// partition the interval.
type Breakdown struct {
	From, To    time.Duration
	Time        [numCategories]time.Duration
	Packets     int
	Bytes       int
	Drops       int
	Retransmits int
	QueueDelay  time.Duration // total time packets waited for the wire
	MaxQueue    int
	Holds       []Hold
	Waiting     []Waiting
}

// Elapsed is To − From.
func (b Breakdown) Elapsed() time.Duration { return b.To - b.From }

// MinRTO is the shortest retransmission timeout the analysis recognises
// (Linux's and gVisor's minimum, 200 ms).
const MinRTO = 200 * time.Millisecond

type flowID struct{ src, dst netip.AddrPort }

type edge struct {
	at    time.Duration
	cat   Category
	delta int
}

// Analyze attributes the time from `from` to `to` (link time) to
// categories.
func Analyze(recs []Record, from, to time.Duration) Breakdown {
	b := Breakdown{From: from, To: to}
	var edges []edge
	add := func(c Category, s, e time.Duration) {
		s, e = max(s, from), min(e, to)
		if e > s {
			edges = append(edges, edge{s, c, +1}, edge{e, c, -1})
		}
	}
	maxSent := map[flowID]uint32{}
	sentAny := map[flowID]bool{}
	lastSend := map[flowID]time.Duration{}
	lastHeard := map[flowID]time.Duration{}   // last delivery to the flow's sender
	ackArrived := map[flowID]time.Duration{}  // last pure ACK delivered to the flow's sender
	dataArrived := map[flowID]time.Duration{} // last data delivered to the flow's sender
	for _, r := range recs {
		f := flowID{r.Src, r.Dst}
		switch r.Kind {
		case link.EventQueue:
			add(Serialization, r.Start, r.Finish)
			if r.SYN {
				add(Handshake, r.Finish, r.Due)
			} else {
				add(RoundTrip, r.Finish, r.Due)
			}
			b.QueueDelay += r.Start - r.At
			b.MaxQueue = max(b.MaxQueue, r.Queue)
		case link.EventRelease, link.EventSupersede:
			add(DelayedACK, r.At-r.Held, r.At)
			if r.At >= from && r.At-r.Held <= to {
				b.Holds = append(b.Holds, Hold{At: r.At - r.Held, Held: r.Held, From: r.Src, Released: r.Kind == link.EventRelease})
			}
		case link.EventDrop:
			b.Drops++
		case link.EventDeliver:
			b.Packets++
			b.Bytes += r.Size
			lastHeard[flowID{r.Dst, r.Src}] = r.At
			if r.TCP && r.Len == 0 {
				ackArrived[flowID{r.Dst, r.Src}] = r.At
			} else if r.TCP {
				dataArrived[flowID{r.Dst, r.Src}] = r.At
			}
		case link.EventSend:
			if !r.TCP || r.Len == 0 {
				continue
			}
			end := r.Seq + uint32(r.Len)
			if sentAny[f] && int32(end-maxSent[f]) <= 0 {
				b.Retransmits++
				if heard, ok := lastHeard[f]; ok && r.At-heard >= MinRTO*9/10 {
					add(Timeout, heard, r.At)
				}
			} else if prev, ok := lastSend[f]; ok && ackArrived[f] == r.At && dataArrived[f] != r.At && r.At > prev && r.At >= from && r.At <= to {
				// Left the instant a pure ACK arrived, with no data arriving
				// that the application could be answering: it was waiting.
				b.Waiting = append(b.Waiting, Waiting{At: r.At, Waited: r.At - prev, From: r.Src, Len: r.Len})
			}
			if !sentAny[f] || int32(end-maxSent[f]) > 0 {
				maxSent[f], sentAny[f] = end, true
			}
			lastSend[f] = r.At
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta
	})
	var active [numCategories]int
	t := from
	for _, e := range edges {
		if e.at > t {
			b.Time[claim(active)] += e.at - t
			t = e.at
		}
		active[e.cat] += e.delta
	}
	if to > t {
		b.Time[claim(active)] += to - t
	}
	return b
}

func claim(active [numCategories]int) Category {
	for c := Category(0); c < Other; c++ {
		if active[c] > 0 {
			return c
		}
	}
	return Other
}

// Share is the fraction of the elapsed time in c.
func (b Breakdown) Share(c Category) float64 {
	if b.Elapsed() <= 0 {
		return 0
	}
	return float64(b.Time[c]) / float64(b.Elapsed())
}

// Categories lists the categories in order, for printing.
func Categories() []Category {
	return []Category{Serialization, Handshake, RoundTrip, DelayedACK, Timeout, Other}
}
