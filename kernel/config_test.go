package kernel

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Via: "wire"}, `link "wire"`},
		{Config{CongestionControl: "vegas-none"}, `"vegas-none"`},
		{Config{Link: link.Config{Delay: -1}}, "Delay"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v; want an error containing %q", c.cfg, err, c.want)
		}
	}
}

// The kernel's list of congestion controls is names separated by
// spaces, ending in a newline, in the order they were registered.
func TestParseCongestionControls(t *testing.T) {
	for in, want := range map[string][]string{
		"reno bbr cubic\n":     {"reno", "bbr", "cubic"},
		"cubic reno\n":         {"cubic", "reno"},
		"reno cubic  htcp \n ": {"reno", "cubic", "htcp"},
		"\n":                   nil,
		"":                     nil,
	} {
		if got := parseCongestionControls(in); !slices.Equal(got, want) {
			t.Errorf("parseCongestionControls(%q) = %q; want %q", in, got, want)
		}
	}
}

// Kernel mode takes any congestion control the kernel lists, bbr and
// those netemu's TCP does not have alike, and refuses another in words
// that say which the kernel has. Where the list cannot be read, the
// registry's names (cubic, reno, bbr) are taken.
func TestCheckCongestionControl(t *testing.T) {
	avail := []string{"reno", "bbr", "cubic", "htcp"}
	for _, cc := range avail {
		if err := checkCongestionControl(cc, avail, nil); err != nil {
			t.Errorf("%s, which the kernel lists: %v; want it taken", cc, err)
		}
	}
	want := `kernel: congestion control "vegas" is not in this kernel; it has reno, bbr, cubic or htcp (net.ipv4.tcp_available_congestion_control; a module must be loaded to be listed: modprobe tcp_vegas)`
	if err := checkCongestionControl("vegas", avail, nil); err == nil || err.Error() != want {
		t.Errorf("vegas, which the kernel does not list: %v; want %q", err, want)
	}
	if err := checkCongestionControl("bbr", []string{"reno", "cubic"}, nil); err == nil || !strings.Contains(err.Error(), "it has reno or cubic") {
		t.Errorf("bbr on a kernel without it: %v; want a refusal naming reno and cubic", err)
	}
	unreadable := errors.New("no /proc")
	for _, cc := range []string{"cubic", "reno", "bbr"} {
		if err := checkCongestionControl(cc, nil, unreadable); err != nil {
			t.Errorf("%s without the kernel's list: %v; want the registry's name taken", cc, err)
		}
	}
	// The registry's names, today's first (one added later comes after).
	want = `kernel: congestion control "vegas" is unknown; want cubic, reno`
	if err := checkCongestionControl("vegas", nil, unreadable); err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), " or ") {
		t.Errorf("vegas without the kernel's list: %v; want %q…", err, want)
	}
}

// Config.Validate checks against the running kernel's list: every
// algorithm it lists validates, and "" (cubic) does.
func TestConfigCongestionControl(t *testing.T) {
	avail, err := AvailableCongestionControls()
	if err != nil {
		t.Skipf("no kernel list of congestion controls here: %v", err)
	}
	for _, cc := range append([]string{""}, avail...) {
		if err := (Config{CongestionControl: tcpstack.CongestionControl(cc)}).Validate(); err != nil {
			t.Errorf("Config{CongestionControl: %q}.Validate() = %v; want nil (the kernel lists %v)", cc, err, avail)
		}
	}
	if err := (Config{CongestionControl: "vegas-none"}).Validate(); err == nil || !strings.Contains(err.Error(), "it has "+orList(avail)) {
		t.Errorf("Config{CongestionControl: vegas-none}.Validate() = %v; want a refusal listing %v", err, avail)
	}
}

// As root on Linux, kernel mode pins each algorithm the kernel lists on
// its routes: a connection dialled across the network runs it (Net.Dial
// checks the pin with TCP_CONGESTION) and carries data.
func TestKernelPinsEveryAvailableCongestionControl(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("kernel mode needs root on Linux (network namespaces); run the tests as root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("kernel mode needs /dev/net/tun: %v", err)
	}
	avail, err := AvailableCongestionControls()
	if err != nil {
		t.Fatal(err)
	}
	for _, cc := range avail {
		t.Run(cc, func(t *testing.T) {
			n, err := New(Config{CongestionControl: tcpstack.CongestionControl(cc)})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			ln, err := n.Listen(80)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				c.Write([]byte("pinned"))
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := n.Dial(ctx, 80)
			if err != nil {
				t.Fatalf("Dial with %s pinned: %v", cc, err)
			}
			defer c.Close()
			if b, err := io.ReadAll(c); err != nil || string(b) != "pinned" {
				t.Errorf("read %q, %v; want the server's bytes", b, err)
			}
		})
	}
}

// Outside Linux, every entry point says that kernel mode needs Linux, as
// an ErrUnsupported that names the system and the emulated alternative.
func TestNotLinux(t *testing.T) {
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "needs Linux network namespaces") || !strings.Contains(err.Error(), "--backend emulated") {
			t.Errorf("%s = %v; want ErrUnsupported saying kernel mode needs Linux and naming the emulated backend", what, err)
		}
	}
	err := notLinux("darwin")
	check(`notLinux("darwin")`, err)
	if !strings.Contains(err.Error(), "on darwin") {
		t.Errorf("notLinux(darwin) = %v; want it to name darwin", err)
	}
	if runtime.GOOS == "linux" {
		return
	}
	_, err = New(Config{})
	check("New", err)
	check("CanReexec", CanReexec())
	_, err = Reexec()
	check("Reexec", err)
}
