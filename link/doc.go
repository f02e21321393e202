// Package link is a simulated point-to-point link that carries raw IPv4
// packets between two sides, A and B (by convention the client and the
// server).
//
// Each direction passes a packet through these stages, in netem's order,
// composed in Send, enqueue (impair.go), admit and queue (queue.go):
//
//  1. delayed ACK: a pure TCP ACK may be held the way a Linux receiver
//     delays it (delack.go), and is discarded if a newer ACK of the same
//     flow overtakes it;
//  2. netem's impairments, in netem's order (impair.go): duplicate, loss
//     (loss.go: random, 4-state, Gilbert-Elliott), corrupt;
//  3. outage: during an interval of Config.Outages the wire is down and
//     the packet is dropped (outage.go);
//  4. queue: the direction's queue discipline (Config.Qdisc, qdisc.go,
//     queue.go), each a file behind one interface: the drop-tail FIFO
//     bounded in packets and bytes (fifo.go, the default), CoDel
//     (codel.go), FQ-CoDel (fqcodel.go) and pfifo_head_drop
//     (headdrop.go), as Linux's; the serializer takes a packet from it
//     each time it is free, and CoDel may drop it there, or mark it CE;
//  5. reorder: a packet may be sent at once, ahead of rate and delay;
//  6. rate: the packet is serialized at Config.Rate after the packets
//     ahead of it; only IP bytes count, plus netem's packet and cell
//     overheads when set;
//  7. delay: the packet arrives Config.Delay after its last bit left,
//     plus netem's jitter (dist.go) when set; the delivery queue is
//     netem's tfifo, so jittered packets may overtake one another;
//     Config.Noise (which experiments set on a virtual clock) adds the
//     far node's time to take the packet in, tens of microseconds, in
//     order;
//
// Every random decision comes from a generator per direction seeded by
// Config.Seed (random.go); fq_codel's flow hash is perturbed by the seed
// too. Every drop is counted with its reason (DropQueueFull, DropTooBig,
// DropClosed, DropOutage, DropLoss, DropCoDel, DropOverlimit,
// DropOverMemory) in Stats, next to the delayed-ACK, impairment and ECN
// counters. Package link/tc reads and writes the link in tc's grammar:
// netem's options, the queue disciplines, rates and sizes.
//
// The link knows nothing about TCP stacks or kernels. It reads time only
// from the clock it is given. On a clock.Sequential (the virtual clock) it
// runs no goroutine of its own and delivers one packet per timer event.
// On a clock.SpawningTimers (the real clock) each direction has a
// delivery goroutine owned by the link, which timers and sends wake;
// Close waits for those goroutines. On any other clock (clock.Precise) a
// timer delivers every packet that is due.
package link
