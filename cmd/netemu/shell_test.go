package main

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Bad input is one line and exit status 2, before anything is built.
func TestShellBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"shell"}, "which command?"},
		{[]string{"shell", "--rtt", "10ms"}, "which command?"},
		{[]string{"shell", "--clock", "virtual", "--", "true"}, "--clock virtual does not apply"},
		{[]string{"shell", "--bogus", "--", "true"}, "unknown flag --bogus"},
		{[]string{"shell", "--delack", "40ms", "--", "true"}, "--delack does not apply"},
		{[]string{"shell", "--port", "http", "--", "true"}, "is not a port"},
		{[]string{"shell", "--rtt", "10ms,20ms", "--", "true"}, "runs one link"},
		{[]string{"shell", "--resolver", "dns.example", "--", "true"}, `"dns.example" is not an IP address or IP:PORT`},
		{[]string{"shell", "--resolver", "192.0.2.53:dns", "--", "true"}, "want 192.0.2.53 or 192.0.2.53:5353"},
		{[]string{"shell", "--isolated", "--resolver", "192.0.2.53", "--", "true"}, "--resolver does not apply with --isolated"},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line with %q", c.args, code, out, errOut, c.want)
		}
	}
}

// A command that cannot run is one line, before anything is built, and
// the status a shell gives: 127 not found, 126 not executable.
func TestShellCommandCannotRun(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd  string
		code int
		want string
	}{
		{"no-such-command-here", 127, "executable file not found"},
		{script, 126, "permission denied"},
	} {
		code, out, errOut := runNetemu("shell", "--", c.cmd)
		if code != c.code || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("shell -- %s: exit %d, stdout %q, stderr %q; want %d and one line with %q", c.cmd, code, out, errOut, c.code, c.want)
		}
	}
}

// With --isolated the command reaches the ports --port names, in order,
// each once, and none when it names none: a service listening on the
// host's loopback when the shell starts is not among them.
func TestShellIsolatedPorts(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	listening := uint16(ln.Addr().(*net.TCPAddr).Port)
	for _, c := range []struct {
		named []uint16
		want  []uint16
	}{
		{nil, nil},
		{[]uint16{8080, 443, 8080}, []uint16{443, 8080}},
	} {
		got, err := (&shellOptions{ports: c.named, isolated: true}).hostPorts()
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("--isolated, --port %v: %v, %v; want %v (not %d, listening but not named)", c.named, got, err, c.want, listening)
		}
	}
}
