package workloads

import (
	"flag"
	"io"
	"testing"
)

// --ccs takes the names package tcp's registry knows; a flow with one that
// netemu's TCP does not run would need kernel TCP. The words are pinned.
func TestShareCCs(t *testing.T) {
	fs := flag.NewFlagSet("share", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	build := shareKind.Flags(fs)
	const help = "congestion control of each flow's sender, in flow order and repeated: cubic,reno,bbr; empty means --cc's"
	if got := fs.Lookup("ccs").Usage; got != help {
		t.Errorf("--ccs help = %q; want %q", got, help)
	}
	if err := fs.Parse([]string{"--ccs", "cubic,vegas"}); err != nil {
		t.Fatal(err)
	}
	if _, err := build(); err == nil || err.Error() != `--ccs "cubic,vegas": "vegas" is not one netemu knows; want a list of cubic, reno or bbr, like cubic,reno` {
		t.Errorf("--ccs cubic,vegas: %v", err)
	}
	if err := (Share{CCs: "reno,vegas"}).Validate(); err == nil || err.Error() != `share: congestion control: "vegas" is not one netemu knows; want a list of cubic, reno or bbr, like cubic,reno` {
		t.Errorf("Share{CCs: reno,vegas}.Validate() = %v", err)
	}
	for _, ccs := range []string{"", "cubic", "reno,cubic", "bbr", "cubic,bbr"} {
		if err := (Share{CCs: ccs}).Validate(); err != nil {
			t.Errorf("Share{CCs: %q}.Validate() = %v; want nil", ccs, err)
		}
	}

	// netemu's TCP runs every congestion control the registry knows:
	// none needs kernel TCP.
	for _, ccs := range []string{"", "cubic", "cubic,reno", "bbr", "cubic,bbr", "reno,bbr,cubic"} {
		if n := (Share{CCs: ccs}).Needs(); n != nil {
			t.Errorf("Share{CCs: %q}.Needs() = %+v; want none", ccs, n)
		}
	}
}
