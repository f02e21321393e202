package link

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// The outage stage.
//
// An Outage takes the link down for an interval: every packet that reaches
// the wire (the rate stage) in either direction during it is dropped and
// counted as DropOutage, including delayed ACKs the delayed-ACK stage
// releases then. Packets already on the wire or propagating when an outage
// starts still arrive, as after a cable is pulled at the sender's end. The
// check is a scan of Config.Outages: no allocation, no timer.

// Outage is an interval [Start, End) during which the link is down. Both
// times are measured from the link's creation; on the virtual clock that
// is the start of the run (clock.Epoch).
type Outage struct {
	Start time.Duration
	End   time.Duration
}

func (o Outage) String() string { return fmt.Sprintf("%v to %v", o.Start, o.End) }

// validateOutages reports the first outage that is not an interval
// 0 ≤ Start < End.
func validateOutages(outages []Outage) error {
	for i, o := range outages {
		if o.Start < 0 || o.End <= o.Start {
			return fmt.Errorf("link: Outages[%d] is %v; want 0 ≤ Start < End, like {Start: time.Second, End: 3 * time.Second}", i, o)
		}
	}
	return nil
}

// down reports whether now falls in an outage. l.mu is held.
func (l *Link) down(now time.Duration) bool {
	for _, o := range l.cfg.Outages {
		if now >= o.Start && now < o.End {
			return true
		}
	}
	return false
}

// AddOutage takes the link down from start to end after now, the instant
// of the call on the link's clock: an outage counted from the moment a
// test chooses rather than from the link's creation. Validate's bounds
// apply to both times.
func (l *Link) AddOutage(start, end time.Duration) error {
	if start < 0 || end <= start || end > MaxDelay {
		return fmt.Errorf("link: AddOutage(%v, %v): want 0 ≤ start < end ≤ %v, like (time.Second, 3*time.Second)", start, end, MaxDelay)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := min(l.now(), math.MaxInt64-end) // saturate: no instant past the end of time
	// A new array: copies of Config handed out keep theirs.
	l.cfg.Outages = append(slices.Clip(l.cfg.Outages), Outage{Start: now + start, End: now + end})
	return nil
}
