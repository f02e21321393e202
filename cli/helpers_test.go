package cli

import (
	"flag"
	"testing"
)

// The commands the tests parse for: run's rules, and sweep's, which
// takes lists.
var (
	testRun   = &Command{Name: "run", Rules: Rules{Groups: LinkRunGroups}}
	testSweep = &Command{Name: "sweep", Lists: true, Rules: Rules{Groups: Groups}}
)

// A command's Repeatable flags may be given more than once; others not.
func TestRepeatable(t *testing.T) {
	c := &Command{Name: "x", Repeatable: []string{"each"}}
	for _, tc := range []struct {
		args []string
		ok   bool
	}{{[]string{"--each", "a", "--each", "b"}, true}, {[]string{"--once", "a", "--once", "b"}, false}, {[]string{"--once", "a"}, true}} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.Func("each", "", func(string) error { return nil })
		fs.String("once", "", "")
		if err := ParseFlags(fs, tc.args, "", c); (err == nil) != tc.ok {
			t.Errorf("%q: %v; want ok %v", tc.args, err, tc.ok)
		}
	}
}
