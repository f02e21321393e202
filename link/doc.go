// Package link is a simulated point-to-point link that carries raw IPv4
// packets between two sides, A and B (by convention the client and the
// server).
//
// Each direction passes a packet through these stages, composed in Send,
// enqueue and deliverNext:
//
//  1. delayed ACK: a pure TCP ACK may be held the way a Linux receiver
//     delays it (see delack.go), and is discarded if a newer ACK of the
//     same flow overtakes it;
//  2. outage: during an interval of Config.Outages the wire is down and
//     the packet is dropped (see outage.go);
//  3. rate: the packet is serialized at Config.Rate, after the packets
//     ahead of it (a token bucket one packet deep); only IP bytes count;
//  4. queue: packets waiting for serialization, drop-tail, bounded in
//     packets and bytes;
//  5. delay: the packet arrives Config.Delay after its last bit left.
//
// Every drop is counted with its reason (DropQueueFull, DropTooBig,
// DropClosed, DropOutage) in Stats, next to the delayed-ACK counters.
// ParseRate, ParseSize and ParseQueue read the units people write (tc's
// rate units, 150KB, 5MiB, a packet count).
//
// The link knows nothing about TCP stacks or kernels. It reads time only
// from the clock it is given and delivers packets in order. On a
// clock.Sequential (the virtual clock) it runs no goroutine of its own and
// delivers one packet per timer event. On a clock.SpawningTimers (the real
// clock) each direction has a delivery goroutine owned by the link, which
// timers and sends wake; Close waits for those goroutines. On any other
// clock (clock.Precise) a timer delivers every packet that is due.
package link
