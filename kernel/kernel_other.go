//go:build !linux

package kernel

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
)

// Net is a kernel-mode network. Outside Linux there is none: New never
// returns one, and its methods exist only so that the API is the same.
type Net struct{}

var _ emu.Env = (*Net)(nil)

// errNotLinux is the error of every entry point here.
var errNotLinux = notLinux(runtime.GOOS)

// New validates cfg and reports that kernel mode needs Linux.
func New(cfg Config) (*Net, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, errNotLinux
}

// CanReexec reports that kernel mode needs Linux.
func CanReexec() error { return errNotLinux }

// Reexec reports that kernel mode needs Linux.
func Reexec() (int, error) { return 0, errNotLinux }

// The methods below keep the API of Linux's Net; they do nothing useful.

func (n *Net) Observe(f link.Observer) bool { return false }
func (n *Net) Facts() Facts                 { return Facts{} }
func (n *Net) Stats() Stats                 { return Stats{} }
func (n *Net) Inodes() [2]uint64            { return [2]uint64{} }
func (n *Net) Close() error                 { return nil }
func (n *Net) Now() time.Time               { return time.Now() }
func (n *Net) Go(f func())                  { go f() }
func (n *Net) Seed() uint64                 { return 0 }

func (n *Net) Sleep(ctx context.Context, d time.Duration) error { return errNotLinux }
func (n *Net) Listen(port uint16) (net.Listener, error)         { return nil, errNotLinux }
func (n *Net) Dial(ctx context.Context, port uint16) (emu.Conn, error) {
	return nil, errNotLinux
}
func (n *Net) ListenPacket(port uint16) (net.PacketConn, error) { return nil, errNotLinux }
func (n *Net) DialPacket(ctx context.Context, port uint16) (net.PacketConn, net.Addr, error) {
	return nil, nil, errNotLinux
}

// RunInClient reports that kernel mode needs Linux.
func (n *Net) RunInClient(cmd *exec.Cmd, started func(*os.Process)) error {
	return errNotLinux
}

// ForwardHost reports that kernel mode needs Linux.
func (n *Net) ForwardHost(port uint16) error { return errNotLinux }

// LoopbackListeners reports that kernel mode needs Linux.
func LoopbackListeners() ([]uint16, error) { return nil, errNotLinux }

// ForwardOutside reports that kernel mode needs Linux.
func (n *Net) ForwardOutside(resolver netip.AddrPort, loopback []netip.Addr) error {
	return errNotLinux
}

// HostResolvers reports that kernel mode needs Linux.
func HostResolvers() (netip.AddrPort, []netip.Addr, error) { return netip.AddrPort{}, nil, errNotLinux }

// IsShellInit is false: kernel mode needs Linux.
func IsShellInit() bool { return false }

// ShellInit reports that kernel mode needs Linux.
func ShellInit() int { return 2 }

// ShellSignals are the signals netemu shell passes on to its command.
var ShellSignals = []os.Signal{os.Interrupt}

// RelaySignal passes s on to init.
func RelaySignal(init *os.Process, s os.Signal) { init.Signal(s) }
