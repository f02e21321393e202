//go:build linux

package kernel

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// A Shell's program runs in the client namespace with NETEMU_SERVER,
// NETEMU_CLIENT and NETEMU_PORTS set, and its status is a shell's: its
// own, or 128 plus the signal; one that cannot start is a StartError.
func TestShellRun(t *testing.T) {
	needRoot(t)
	n := newNet(t, Config{Link: link.Config{Delay: time.Millisecond}, Via: TUN})
	var out bytes.Buffer
	sh := Shell{Args: []string{"sh", "-c", `echo "$NETEMU_SERVER $NETEMU_CLIENT $NETEMU_PORTS"; exit 3`}, Ports: []uint16{80, 8080}, Stdout: &out}
	exit, err := sh.Run(n)
	want := ServerAddr.String() + " " + ClientAddr.String() + " 80 8080\n"
	if err != nil || exit.Status != 3 || out.String() != want || exit.Took <= 0 {
		t.Errorf("%+v, %v, output %q; want status 3 and %q", exit, err, out.String(), want)
	}
	exit, err = Shell{Args: []string{"sh", "-c", "kill -TERM $$"}}.Run(n)
	if err != nil || exit.Status != 128+int(syscall.SIGTERM) {
		t.Errorf("a program a signal ended: %+v, %v; want status %d", exit, err, 128+int(syscall.SIGTERM))
	}
	_, err = Shell{Args: []string{"no-such-program-here"}}.Run(n)
	var se *StartError
	if !errors.As(err, &se) || !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("a program not found: %v; want a StartError wrapping exec.ErrNotFound", err)
	}
	if _, err := (Shell{}).Run(n); err == nil {
		t.Error("a Shell without a program ran")
	}
}

// Signals reach the program through its init; a SIGTERM it ignores is
// followed by SIGKILL after KillAfter.
func TestShellSignalsKillAfter(t *testing.T) {
	needRoot(t)
	n := newNet(t, Config{Link: link.Config{Delay: time.Millisecond}, Via: TUN})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close() // not before Run returns: it passes w on as it starts
	sigs := make(chan os.Signal, 1)
	sh := Shell{Args: []string{"sh", "-c", `trap "" TERM; echo ready; exec sleep 30`}, Stdout: w,
		Signals: sigs, KillAfter: 200 * time.Millisecond}
	type result struct {
		exit Exit
		err  error
	}
	done := make(chan result, 1)
	go func() {
		exit, err := sh.Run(n)
		done <- result{exit, err}
	}()
	b := make([]byte, 6)
	if _, err := r.Read(b); err != nil || string(b) != "ready\n" {
		t.Fatalf("the program said %q, %v; want ready", b, err)
	}
	sigs <- syscall.SIGTERM
	select {
	case res := <-done:
		if res.err != nil || res.exit.Status != 128+int(syscall.SIGKILL) {
			t.Errorf("%+v, %v; want status %d (killed after the SIGTERM it ignored)", res.exit, res.err, 128+int(syscall.SIGKILL))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a program that ignores SIGTERM outlived KillAfter")
	}
}

// Forward makes the host's loopback ports answer at ServerAddr; an
// isolated Shell reaches nothing beyond, and one that is not says where
// its DNS goes.
func TestShellForward(t *testing.T) {
	needRoot(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	if ports, err := HostPorts(nil); err != nil || !slices.Contains(ports, port) {
		t.Errorf("HostPorts: %v, %v; want %d among them", ports, err, port)
	}
	n := newNet(t, Config{Link: link.Config{Delay: time.Millisecond}, Via: TUN})
	out, err := Shell{Ports: []uint16{port}, Isolated: true}.Forward(n)
	if err != nil || out != (Outside{}) {
		t.Fatalf("isolated: %+v, %v; want nothing outside", out, err)
	}
	c, err := n.Dial(t.Context(), port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got bytes.Buffer
	if _, err := got.ReadFrom(c); err != nil || got.String() != "hi" {
		t.Errorf("read %q, %v across the link from the host's port %d; want hi", got.String(), err, port)
	}

	n2 := newNet(t, Config{Link: link.Config{Delay: time.Millisecond}, Via: TUN})
	resolver := netip.MustParseAddrPort("192.0.2.53:5353")
	out, err = Shell{Resolver: resolver}.Forward(n2)
	if err != nil || !out.TCP || out.Resolver != resolver {
		t.Errorf("not isolated, resolver %v: %+v, %v; want TCP and that resolver", resolver, out, err)
	}
}
