// Package proxy puts unmodified programs behind the emulated link.
//
// A Proxy listens on real sockets (loopback, usually) and carries every
// connection it accepts across an emu.Net on the real clock: the client
// host dials the server host over the link, and the server host's side
// opens a real connection to the upstream. Port forwards name the
// upstream up front; a SOCKS5 listener (CONNECT, with IPv4, IPv6 or
// domain-name targets) lets the client name it per connection, so that
// curl --socks5-hostname and browsers' --proxy-server reach any upstream.
//
//	client ──loopback── [Proxy: client host] ══ emulated link ══ [server host] ──loopback── upstream
//
// A caller that accepts connections itself hands each one to Serve,
// with its upstream; a Proxy without Forwards or SOCKS5 listens on
// nothing and carries only those (package toxiproxy gives every
// connection a network and a Proxy of its own that way). A Config.Shape
// can act on each direction's bytes where they leave the link for the
// receiving program (Shaper): pass them on in pieces, later, in part or
// not at all, and close or reset the connection.
//
// The emulated segment carries exactly the client's bytes: which upstream
// a connection is for travels beside it, inside the process, not in the
// stream, so a capture of the link shows the application's own protocol,
// on the upstream's port.
//
// Listeners have no authentication. A listen address without a host
// (:8080) is loopback; the SOCKS5 listener reaches only the destinations
// Config.Allow allows (loopback by default), checked on the addresses it
// dials, and answers once the upstream is dialed, with the reply that
// names the outcome (RFC 1928's codes, HTTP 200/403/502/504).
//
// A connection behaves as one real TCP path: a FIN is passed on as a FIN
// (half-close, both ways), a reset as a reset (an abort with SO_LINGER 0),
// an upstream that refuses or cannot be resolved closes a forward's
// client connection with a reset as soon as the refusal is known, and a slow
// reader holds the writer back through the emulated stack's windows
// rather than through memory: each direction has one buffer of
// Config.BufferSize, taken only while there is something to copy. An
// idle connection sends nothing and wakes nothing; it holds its
// goroutines and the two emulated endpoints, about 55 KB
// (docs/PERFORMANCE.md).
//
// # A split connection
//
// The client's own TCP ends at the proxy, over loopback; the emulated
// link is crossed by the emulated hosts' TCP (the network's; netemu
// proxy's is netemu's TCP, cubic, Nagle off, delaying its own ACKs as
// Linux does). So the client's
// handshake, request, response and the link's rate, queue and loss are
// all there, one RTT per round trip as on a real path, but what the
// client's own stack decides is not: its Nagle algorithm (it coalesces
// nothing, since loopback acknowledges at once), its congestion control
// and initial window, its retransmission timers and its socket options
// are replaced by the emulated stack's. That matters for a program whose
// behaviour depends on its own TCP (Nagle with small writes, a tuned
// congestion control, TCP_NOTSENT_LOWAT, keepalive timers) and for the
// timing of the very first bytes: the client's connect() returns at once,
// and a refused upstream of a forward is seen as a reset after the
// emulated handshake, not as a refused connect. For those, run the
// program itself on an emulated path in kernel mode (netemu shell), where
// its own TCP crosses the link.
package proxy
