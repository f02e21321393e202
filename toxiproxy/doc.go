// Package toxiproxy serves toxiproxy's HTTP API (Shopify's toxiproxy
// 2.x: the same paths, JSON, defaults, status codes and error bodies) on
// netemu's emulated link, so that test suites written against toxiproxy
// and its clients switch without a code change; netemu toxiproxy is its
// command.
//
// A proxy of the API listens on a real socket and carries each
// connection it accepts across a network of its own: an emu.Net on the
// real clock and a proxy.Proxy (proxy.Proxy.Serve), closed when the
// connection ends, so that memory follows the connections open. Its
// link is Config.Link with the link toxics that apply to the connection
// added, per direction: upstream is the client's direction (link.AtoB),
// downstream the server's (link.BtoA).
//
//	client ──loopback── [listen] ══ the connection's own link ══ ──loopback── upstream
//
// The toxics, by where they act:
//
//   - on the link: latency (+ jitter), the direction's one-way delay,
//     with the order of packets kept, as toxiproxy keeps the order of
//     chunks; bandwidth (KB/s, 1 KB = 1000 bytes), the direction's rate,
//     which counts whole IP packets, headers included, as a real link
//     does: a full-sized TCP segment carries 1448 bytes of data in 1500,
//     so a bulk transfer's goodput is about 96.5 % of the rate (toxiproxy
//     counts the data alone); and netemu's own: netem ("options", tc's
//     netem grammar), loss ("percent", "correlation": netem's loss random)
//     and qdisc ("options": fq_codel or codel, with tc's options). A
//     toxic's toxicity is rolled for each connection when it opens.
//     They reach open connections too, from their next packet
//     (emu.Net.SetLink, through conn.relink).
//   - past the link, on the bytes the receiving program is given
//     (proxy.Shaper), on open connections too, as toxiproxy applies
//     them: timeout, reset_peer, slow_close, limit_data, slicer, and a
//     bandwidth of 0, which holds the traffic until it changes.
//
// On real TCP the receiver's reads are its own: a slicer's pieces are
// written one by one with their delays, but a program that reads later
// gets them in one read, as it would from toxiproxy's socket.
package toxiproxy
