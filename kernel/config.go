// Package kernel runs workloads over real kernel TCP: two network
// namespaces, one per host, joined either by netemu's own link bridged
// through two TUN devices, or by a veth pair shaped with tc netem where
// the kernel has it. It implements emu.Env, so the workloads run unchanged.
//
// Namespaces, devices and sockets are made in-process on locked OS
// threads; the namespaces are unnamed, so nothing outlives the process,
// even on SIGKILL. It needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN).
//
// Kernel mode is Linux only. Elsewhere the package builds with the same
// API, and New, CanReexec and Reexec return an error wrapping
// ErrUnsupported. This file holds the plain data both builds share.
package kernel

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// Via is how the two namespaces are joined.
type Via string

// Ways to join the two namespaces.
const (
	Auto  Via = "auto"  // netem where the kernel has it, else TUN
	TUN   Via = "tun"   // netemu's link, bridged through two TUN devices
	Netem Via = "netem" // a veth pair with tc netem on each side's egress
)

// Config describes a kernel-mode network.
type Config struct {
	// Link is the link between the namespaces. Its DelayedACK is ignored:
	// kernel TCP delays its own ACKs.
	Link link.Config

	// Via is Auto (default), TUN or Netem.
	Via Via

	// CongestionControl is pinned on both sides' routes: one netemu's
	// TCP runs (tcpstack.Netemu.CongestionControls), "cubic" (default)
	// or "reno".
	CongestionControl tcpstack.CongestionControl

	// Probe, if set, receives the sender state of every connection the
	// network handed out (Dial, Accept), read from the kernel's TCP_INFO
	// every ProbeEvery of wall time, as the emulated hosts' probe does
	// per segment. ProbeEvery 0 means one millisecond.
	Probe      func(tcpstack.Sample)
	ProbeEvery time.Duration
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if err := c.Link.Validate(); err != nil {
		return err
	}
	switch c.Via {
	case "", Auto, TUN, Netem:
	default:
		return fmt.Errorf("kernel: link %q is unknown; want auto, tun or netem", c.Via)
	}
	// Kernel mode pins the congestion controls netemu's TCP runs, so that
	// a kernel run compares with an emulated one. The registry knows more
	// (bbr) that the kernel may have, and a connection can pick them
	// (trackedConn.SetCongestionControl), but kernel mode does not pin
	// them yet.
	if cc := c.CongestionControl; cc != "" && !slices.Contains(tcpstack.Netemu.CongestionControls(), cc) {
		return fmt.Errorf("kernel: congestion control %q is unknown; want %s", cc, tcpstack.Netemu.CongestionControlChoices())
	}
	return nil
}

// ErrUnsupported is wrapped by errors that name a missing privilege or
// kernel feature.
var ErrUnsupported = errors.New("kernel mode unavailable")

// notLinux is the error of kernel mode on an operating system other than
// Linux; goos names it.
func notLinux(goos string) error {
	return fmt.Errorf("%w on %s: kernel mode needs Linux network namespaces and TUN devices; use the emulated backend (--backend emulated) or run on Linux", ErrUnsupported, goos)
}

// Addresses of the two namespaces, as in the emulated network.
var (
	ClientAddr = emu.ClientAddr
	ServerAddr = emu.ServerAddr
)

// ReexecEnv marks a process that Reexec started inside its own user
// namespace.
const ReexecEnv = "NETEMU_USERNS"

// Facts describe the kernel TCP the results came from.
type Facts struct {
	Kernel             string `json:"kernel"`
	HZ                 int    `json:"hz,omitempty"`
	Link               Via    `json:"link"` // TUN or Netem
	CongestionControl  string `json:"cc"`
	PingpongThresh     string `json:"tcp_pingpong_thresh,omitempty"`
	SlowStartAfterIdle string `json:"tcp_slow_start_after_idle,omitempty"`
}

// String describes the facts in one line.
func (f Facts) String() string {
	return fmt.Sprintf("Linux %s (HZ %d), link %s, cc %s, tcp_pingpong_thresh %s, tcp_slow_start_after_idle %s",
		f.Kernel, f.HZ, f.Link, f.CongestionControl, f.PingpongThresh, f.SlowStartAfterIdle)
}

// Stats are the link's counters (TUN bridge only) and how late the
// bridge delivered packets against their due time.
type Stats struct {
	Link        link.Stats
	LateMean    time.Duration
	LateP99     time.Duration
	LateMax     time.Duration
	LateSamples uint64
	// TUNWriteErrors counts delivered packets the kernel refused.
	TUNWriteErrors uint64
}
