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
	// its serialization, Due its arrival at the far end.
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
// held: it must be quick and must not call the link.
type Observer func(Event)

// Start is the instant (on the link's clock) from which event times count.
func (l *Link) Start() time.Time { return l.start }
