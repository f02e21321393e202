// Package tcp is netemu's own TCP: Linux's algorithms, written from
// scratch as a gVisor stack.TransportProtocol (NewProtocol), so that a
// gVisor netstack host runs the TCP a Linux host would. Every rule, with
// the Linux function or RFC section it follows and the test that checks
// it, is listed in docs/TCP.md; a rule here is never a constant fitted to
// a measurement.
//
// The protocol demultiplexes its own connections: no endpoint is
// registered with the stack, so every segment reaches
// Protocol.HandleUnknownDestinationPacket and its connection in one map
// lookup. It has no goroutine of its own: a segment is handled where the
// NIC delivers it, timers are the run's clock's (Options.Clock: virtual,
// real or a synctest bubble's), and the application's calls run under the
// connection's lock, so a run on the virtual clock is deterministic.
// With an Egress (SetEgress) segments to a peer on the host's own network
// skip gVisor's IPv4 send path.
//
// Its parts, a file each: the handshake and segment processing
// (input.go), sending and segmentation (send.go), ACK processing and
// SACK (ack.go), loss recovery, RACK, PRR and the retransmission timer
// (recovery.go), the receiver and its delayed ACKs (recv.go), RTT and RTO
// (rtt.go), timers on Linux's jiffies (timers.go), the congestion
// controls (cc.go, cubic.go, bbr.go) and their registry, which the
// packages above ask for names (ccregistry.go), the delivery-rate
// samples an ACK gives them (rate.go), pacing at the rate one sets
// (pacing.go), options (options.go), tcp_info
// (info.go), the byte rings of the send and receive buffers (ring.go) and
// the queues of sent segments, held only while they hold something
// (pool.go).
//
// Locks: an endpoint's, then (for a child not yet accepted) its
// listener's, then the protocol's, then the leaves; see endpoint.
package tcp
