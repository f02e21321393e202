package kernel

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Via: "wire"}, `link "wire"`},
		{Config{CongestionControl: "bbr"}, `"bbr"`},
		{Config{Link: link.Config{Delay: -1}}, "Delay"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v; want an error containing %q", c.cfg, err, c.want)
		}
	}
}

// Kernel mode pins the congestion controls netemu's TCP runs and refuses
// others, bbr included, in words that list those it takes.
func TestConfigCongestionControl(t *testing.T) {
	for _, cc := range []tcpstack.CongestionControl{"", tcpstack.Cubic, tcpstack.Reno} {
		if err := (Config{CongestionControl: cc}).Validate(); err != nil {
			t.Errorf("Config{CongestionControl: %q}.Validate() = %v; want nil", cc, err)
		}
	}
	for _, cc := range []tcpstack.CongestionControl{"bbr", "vegas"} {
		want := `kernel: congestion control "` + string(cc) + `" is unknown; want cubic or reno`
		if err := (Config{CongestionControl: cc}).Validate(); err == nil || err.Error() != want {
			t.Errorf("Config{CongestionControl: %q}.Validate() = %v; want %q", cc, err, want)
		}
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
