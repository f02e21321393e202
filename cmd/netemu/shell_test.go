package main

import (
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
	} {
		code, out, errOut := runCmd(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line with %q", c.args, code, out, errOut, c.want)
		}
	}
}
