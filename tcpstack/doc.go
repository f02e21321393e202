// Package tcpstack turns a gVisor network stack into an emulated host: one
// NIC with an IPv4 address in [Prefix], TCP settings pinned in one place
// (TCPConfig: CUBIC, SACK, RACK, Linux-like buffers), randomness
// seeded from the run, every timer on the run's clock, and Dial and
// Listen returning net.Conn and net.Listener.
//
// A Host exchanges raw IPv4 packets with the outside through two plain
// functions: the send function given to New receives each packet the host
// emits, and Deliver hands the host a packet that arrived. Package emu
// joins two hosts with a link; most users want that, or package emutest.
//
// Conn behaves like a *net.TCPConn on the run's clock:
//
//   - deadlines (SetDeadline and friends) are instants of the run's clock,
//     and an expired one fails with os.ErrDeadlineExceeded;
//   - SetNoDelay switches Nagle's algorithm (off by default, as in Go's
//     net package);
//   - errors match the kernel's with errors.Is: syscall.ECONNREFUSED when
//     nothing listens, syscall.ECONNRESET after a reset,
//     syscall.ETIMEDOUT when the stack gives up retransmitting, and
//     net.ErrClosed once the connection or host is closed. The gVisor
//     error stays reachable with errors.As and a target of type *Error.
package tcpstack
