// Package kernel runs workloads over real kernel TCP: two network
// namespaces, one per host, joined either by netemu's own link bridged
// through two TUN devices, or by a veth pair shaped with tc netem where
// the kernel has it. It implements emu.Env, so the workloads run unchanged.
// TopoNet does the same for any topology (package topo): a namespace per
// host and per router, every link netemu's own through a TUN device at
// each end, the emulated network's addresses and routes, and an emu.Env
// per flow (TopoNet.Between).
//
// Namespaces, devices and sockets are made in-process on locked OS
// threads; the namespaces are unnamed, so nothing outlives the process,
// even on SIGKILL. It needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN).
//
// Kernel mode is Linux only. Elsewhere the package builds with the same
// API, and New, CanReexec and Reexec return an error wrapping
// ErrUnsupported. This file holds the plain data both builds share, and
// the check of a congestion control against the kernel's list.
package kernel

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcp"
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

	// CongestionControl is pinned on both sides' routes: any the
	// running kernel lists in net.ipv4.tcp_available_congestion_control
	// (AvailableCongestionControls), "cubic" (default), "reno", "bbr" or
	// another the kernel has loaded.
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
	if cc := c.CongestionControl; cc != "" {
		avail, err := AvailableCongestionControls()
		return checkCongestionControl(string(cc), avail, err)
	}
	return nil
}

// availableCongestionControls is where Linux lists the congestion
// controls it has registered: built in, or loaded as modules
// (net.ipv4.tcp_available_congestion_control).
const availableCongestionControls = "/proc/sys/net/ipv4/tcp_available_congestion_control"

// AvailableCongestionControls returns the congestion controls the
// running kernel lists (net.ipv4.tcp_available_congestion_control), in
// its order: "reno", "bbr", "cubic" here. It is an error where there is
// no such list (not Linux, no /proc).
func AvailableCongestionControls() ([]string, error) {
	b, err := os.ReadFile(availableCongestionControls)
	if err != nil {
		return nil, fmt.Errorf("kernel: the kernel's congestion controls: %w", err)
	}
	return parseCongestionControls(string(b)), nil
}

// parseCongestionControls reads the list as the kernel writes it: names
// separated by spaces, a newline at the end.
func parseCongestionControls(s string) []string {
	return strings.Fields(s)
}

// checkCongestionControl accepts cc if the kernel lists it (avail, read
// without error). Where the kernel's list cannot be read (readErr),
// the names package tcp's registry knows are accepted, so that a
// configuration validates where kernel mode cannot run (New then says
// why).
func checkCongestionControl(cc string, avail []string, readErr error) error {
	if readErr == nil {
		if slices.Contains(avail, cc) {
			return nil
		}
		return missingCC{fmt.Sprintf("kernel: congestion control %q is not in this kernel; it has %s (net.ipv4.tcp_available_congestion_control; a module must be loaded to be listed: modprobe tcp_%s)",
			cc, orList(avail), cc)}
	}
	var known []string
	for _, c := range tcp.CongestionControls() {
		known = append(known, c.Name)
	}
	if slices.Contains(known, cc) {
		return nil
	}
	return fmt.Errorf("kernel: congestion control %q is unknown; want %s", cc, orList(known))
}

// orList joins words as "a, b or c"; "none" for no words.
func orList(words []string) string {
	switch len(words) {
	case 0:
		return "none"
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// missingCC is a congestion control this kernel does not list. It is
// errors.ErrUnsupported, as a flow's missing one is (Config.Run): the
// kernel lacks a choice, which other cases may not need.
type missingCC struct{ msg string }

func (e missingCC) Error() string { return e.msg }

// Is makes missingCC errors.ErrUnsupported.
func (missingCC) Is(target error) bool { return target == errors.ErrUnsupported }

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
	// BridgeThread is the scheduling of the TUN bridge's delivering
	// thread: "SCHED_FIFO 10", or ordinary with the reason; "" for netem.
	BridgeThread string `json:"bridge_thread,omitempty"`
}

// String describes the facts in one line.
func (f Facts) String() string {
	s := fmt.Sprintf("Linux %s (HZ %d), link %s, cc %s, tcp_pingpong_thresh %s, tcp_slow_start_after_idle %s",
		f.Kernel, f.HZ, f.Link, f.CongestionControl, f.PingpongThresh, f.SlowStartAfterIdle)
	if f.BridgeThread != "" {
		s += ", bridge thread " + f.BridgeThread
	}
	return s
}

// Stats are the link's counters (TUN bridge only) and how late the
// bridge delivered packets against their due time.
type Stats struct {
	// Link is the pair's link's counters (a topology's first link's).
	Link link.Stats
	// Links are every link's, in the topology's order (the pair's one
	// link on two hosts); nil for netem.
	Links       []link.Stats
	LateMean    time.Duration
	LateP99     time.Duration
	LateMax     time.Duration
	LateSamples uint64
	// TUNWriteErrors counts delivered packets the kernel refused.
	TUNWriteErrors uint64
}
