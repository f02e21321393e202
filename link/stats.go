package link

import "time"

// Dir names a direction of the link.
type Dir uint8

// The two directions. Side A is conventionally the client.
const (
	AtoB Dir = 0
	BtoA Dir = 1
)

func (d Dir) String() string {
	if d == AtoB {
		return "a>b"
	}
	return "b>a"
}

// DropReason says why the link discarded a packet.
type DropReason uint8

// Reasons for drops.
const (
	DropQueueFull  DropReason = iota // the queue was at its packet or byte limit
	DropTooBig                       // larger than the MTU
	DropClosed                       // sent to, or pending in, a closed link
	DropOutage                       // reached the wire during an outage (outage.go)
	DropLoss                         // lost by the loss stage (loss.go)
	DropCoDel                        // dropped by CoDel at dequeue (codel.go)
	DropOverlimit                    // over the qdisc's packet limit (codel.go, fqcodel.go)
	DropOverMemory                   // over fq_codel's memory limit (fqcodel.go)
	DropTraceEnded                   // waiting when a trace that does not repeat ended (trace.go)
	numDropReasons
)

func (r DropReason) String() string {
	switch r {
	case DropQueueFull:
		return "queue-full"
	case DropTooBig:
		return "too-big"
	case DropClosed:
		return "closed"
	case DropOutage:
		return "outage"
	case DropLoss:
		return "loss"
	case DropCoDel:
		return "codel"
	case DropOverlimit:
		return "overlimit"
	case DropOverMemory:
		return "overmemory"
	case DropTraceEnded:
		return "trace-ended"
	}
	return "unknown"
}

// Count is the number of drop reasons: they are 0 to Count()-1.
func (DropReason) Count() DropReason { return numDropReasons }

// Drops counts drops by reason.
type Drops [numDropReasons]uint64

// Total is the sum over all reasons.
func (d Drops) Total() uint64 {
	var n uint64
	for _, v := range d {
		n += v
	}
	return n
}

// DirStats are the counters of one direction.
type DirStats struct {
	SentPackets uint64 // offered to the link
	SentBytes   uint64
	Packets     uint64 // delivered at the far end
	Bytes       uint64
	Drops       Drops

	PeakQueuePackets int // most packets waiting or on the wire at once
	PeakQueueBytes   int

	// Impairments (impair.go). Duplicated counts the copies made,
	// Corrupted the packets with a flipped bit (delivered, then dropped by
	// the receiver's checksum), Reordered those sent ahead of the delay.
	Duplicated uint64
	Corrupted  uint64
	Reordered  uint64

	// ECNMarked counts the packets CoDel marked CE instead of dropping
	// (CoDelParams.ECN).
	ECNMarked uint64

	// Delayed-ACK stage. An ACK is held, then either released by the timer
	// or superseded by a later packet of the flow carrying a newer ACK (the
	// held one is then discarded, as Linux would never have sent it).
	ACKsHeld       uint64
	ACKsReleased   uint64
	ACKsSuperseded uint64
	HoldTime       time.Duration // total time ACKs spent held
	MaxHoldTime    time.Duration
}

// Stats are the counters of both directions, indexed by Dir.
type Stats [2]DirStats
