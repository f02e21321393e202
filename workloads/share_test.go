package workloads

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// --ccs takes the names package tcp's registry knows; a flow with one that
// netemu's TCP does not run would need kernel TCP. The words are pinned.
func TestShareCCs(t *testing.T) {
	fs := flag.NewFlagSet("share", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	build := shareKind.Flags(fs)
	// The registry's names, today's first (one added later comes after).
	const help, end = "congestion control of each flow's sender, in flow order and repeated: cubic,reno,bbr", "; empty means --cc's"
	if got := fs.Lookup("ccs").Usage; !strings.HasPrefix(got, help) || !strings.HasSuffix(got, end) {
		t.Errorf("--ccs help = %q; want %q…%q", got, help, end)
	}
	if err := fs.Parse([]string{"--ccs", "cubic,vegas"}); err != nil {
		t.Fatal(err)
	}
	refused := func(err error, start string) bool {
		return err != nil && strings.HasPrefix(err.Error(), start+`"vegas" is not one netemu knows; want a list of cubic, reno`) && strings.HasSuffix(err.Error(), ", like cubic,reno")
	}
	if _, err := build(); !refused(err, `--ccs "cubic,vegas": `) {
		t.Errorf("--ccs cubic,vegas: %v", err)
	}
	if err := (Share{CCs: "reno,vegas"}).Validate(); !refused(err, "share: congestion control: ") {
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
