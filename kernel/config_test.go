package kernel

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/netemu/netemu/link"
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
