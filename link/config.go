package link

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Defaults applied to zero fields of Config.
const (
	DefaultQueuePackets = 1000 // netem's default limit
	DefaultMTU          = 1500
	// MinMTU and MaxMTU bound every MTU of netemu: the datagram every
	// IPv4 host must accept (RFC 791), and IPv4's largest packet.
	MinMTU = 576
	MaxMTU = 65535
	// LinuxDelayedACK is Linux's TCP_DELACK_MIN, the usual delayed-ACK
	// timeout.
	LinuxDelayedACK = 40 * time.Millisecond
)

// Config describes a link. Both directions get the same parameters. The
// zero value is an ideal link: no delay, unlimited rate, a 1000-packet
// queue, MTU 1500, no delayed-ACK emulation.
type Config struct {
	// Delay is the one-way propagation delay of each direction (half the
	// round-trip time). 0 means none.
	Delay time.Duration

	// Rate is the serialization rate of each direction in bits per second.
	// Only IP bytes are counted: no link-layer framing is added. 0 means
	// unlimited (packets are never queued).
	Rate float64

	// QueuePackets bounds, per direction, the packets accepted but not yet
	// fully serialized, the one on the wire included. A packet arriving at
	// a full queue is dropped (DropQueueFull). 0 means 1000.
	QueuePackets int

	// QueueBytes bounds the same packets by their total size in bytes.
	// 0 means no byte bound.
	QueueBytes int

	// MTU is the largest IP packet the link carries, in bytes; larger ones
	// are dropped (DropTooBig). 0 means 1500.
	MTU int

	// DelayedACK, when positive, makes the link delay pure TCP ACKs the way
	// Linux's receiver does, releasing a held ACK after this long unless
	// Linux would have sent it earlier. Use LinuxDelayedACK (40ms) to mimic
	// Linux. 0 disables the stage.
	DelayedACK time.Duration

	// Outages are intervals, measured from the link's creation, during
	// which both directions drop every packet that reaches the wire
	// (DropOutage); see Outage. nil means none. The link keeps its own
	// copy.
	Outages []Outage
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.QueuePackets == 0 {
		c.QueuePackets = DefaultQueuePackets
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	c.Outages = slices.Clone(c.Outages) // the link's own copy (outage.go)
	return c
}

// Validate reports the first field that holds nonsense, naming the field
// and the accepted range.
func (c Config) Validate() error {
	switch {
	case c.Delay < 0:
		return fmt.Errorf("link: Delay is %v; want a duration of 0 or more (0 means no delay)", c.Delay)
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0:
		return fmt.Errorf("link: Rate is %v; want bits per second, a finite number of 0 or more (0 means unlimited)", c.Rate)
	case c.Rate > 0 && c.Rate < 8:
		return fmt.Errorf("link: Rate is %v bit/s; want at least 8 bit/s, or 0 for unlimited", c.Rate)
	case c.QueuePackets < 0:
		return fmt.Errorf("link: QueuePackets is %d; want at least 1 packet (0 means the default, %d)", c.QueuePackets, DefaultQueuePackets)
	case c.QueueBytes < 0:
		return fmt.Errorf("link: QueueBytes is %d; want at least one packet's size in bytes (0 means no byte limit)", c.QueueBytes)
	case c.MTU < 0 || (c.MTU > 0 && c.MTU < MinMTU) || c.MTU > MaxMTU:
		return fmt.Errorf("link: MTU is %d; want %d to %d bytes (0 means %d)", c.MTU, MinMTU, MaxMTU, DefaultMTU)
	case c.QueueBytes > 0 && c.QueueBytes < c.withDefaults().MTU:
		return fmt.Errorf("link: QueueBytes is %d; want at least the MTU (%d bytes) so that a full-sized packet fits", c.QueueBytes, c.withDefaults().MTU)
	case c.DelayedACK < 0:
		return fmt.Errorf("link: DelayedACK is %v; want a duration of 0 or more (0 disables, 40ms is Linux)", c.DelayedACK)
	}
	return validateOutages(c.Outages) // outage.go
}
