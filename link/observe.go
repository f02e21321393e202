package link

import "time"

// EventKind says what happened to a packet.
type EventKind uint8

// Kinds of events, in the order a packet meets them.
const (
	// EventSend: the packet was offered to the link.
	EventSend EventKind = iota
	// EventHold: the delayed-ACK stage kept the ACK.
	EventHold
	// EventSupersede: a held ACK was discarded, replaced by a newer ACK of
	// its flow. Held says for how long it was held.
	EventSupersede
	// EventRelease: the delayed-ACK timer released a held ACK; an
	// EventQueue follows. Held says for how long it was held.
	EventRelease
	// EventQueue: the packet entered the rate stage. Start and Finish are
	// its serialization, Due its arrival at the far end. With a codel or
	// fq_codel qdisc the event comes when the packet leaves the qdisc, at
	// Start; At is still its arrival in the queue, so it may be earlier
	// than the At of events before it.
	EventQueue
	// EventDrop: the packet was dropped for Reason.
	EventDrop
	// EventDeliver: the packet reached the far end.
	EventDeliver
)

func (k EventKind) String() string {
	switch k {
	case EventSend:
		return "send"
	case EventHold:
		return "hold"
	case EventSupersede:
		return "supersede"
	case EventRelease:
		return "release"
	case EventQueue:
		return "queue"
	case EventDrop:
		return "drop"
	case EventDeliver:
		return "deliver"
	}
	return "unknown"
}

// Event is one step of one packet through the link. Times count from the
// link's creation.
type Event struct {
	Kind   EventKind
	Dir    Dir
	At     time.Duration // since the link's creation
	Time   time.Time     // the same instant on the link's clock
	Packet []byte        // valid only during the call

	Start, Finish, Due time.Duration // EventQueue
	Queue              int           // EventQueue: packets queued or on the wire, this one included
	Held               time.Duration // EventSupersede, EventRelease
	Reason             DropReason    // EventDrop
}

// Observer receives every event of a link, in order, with the link's lock
// held: it must be quick and must not call the link. On a discrete-event
// clock it runs inside the link's quiet event (clock.QuietTimers): an
// observer that readies a goroutine which acts on the run (a send on a
// channel someone waits on) calls clock.Stir first.
type Observer func(Event)

// Start is the instant (on the link's clock) from which event times count.
func (l *Link) Start() time.Time { return l.start }

// Observe makes f receive every event of the link from now on (nil stops
// it). Set it before traffic flows to see whole connections.
func (l *Link) Observe(f Observer) {
	l.mu.Lock()
	l.obs = f
	l.mu.Unlock()
}

// emit hands e to the observer. l.mu is held and l.obs is not nil.
func (l *Link) emit(e Event) {
	e.Time = l.start.Add(e.At)
	l.obs(e)
}

// drop counts a drop and reports it. l.mu is held.
func (l *Link) drop(d *direction, why DropReason, pkt []byte, now time.Duration) {
	d.stats.Drops[why]++
	if l.obs != nil {
		l.emit(Event{Kind: EventDrop, Dir: d.dir, At: now, Packet: pkt, Reason: why})
	}
}
