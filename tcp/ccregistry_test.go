package tcp

import (
	"slices"
	"testing"
)

// The registry lists each algorithm once, the default first, those
// netemu's TCP runs before those it knows by name only; each one it runs
// builds an instance of its own name and needs no more than the sender
// gives.
func TestCongestionControlRegistry(t *testing.T) {
	ccs := CongestionControls()
	var names []string
	for _, c := range ccs {
		names = append(names, c.Name)
	}
	if want := []string{"cubic", "reno", "bbr"}; !slices.Equal(names, want) {
		t.Fatalf("CongestionControls() names %v; want %v", names, want)
	}
	if ccs[0].Name != DefaultCongestionControl || !ccs[0].Runs() {
		t.Errorf("the first congestion control is %q (runs: %v); want the default, %q, which netemu's TCP runs", ccs[0].Name, ccs[0].Runs(), DefaultCongestionControl)
	}
	byName := map[string]bool{}
	for i, c := range ccs {
		if byName[c.Name] {
			t.Errorf("%q is registered twice", c.Name)
		}
		byName[c.Name] = true
		if c.About == "" {
			t.Errorf("%q has no About", c.Name)
		}
		if got, ok := LookupCongestionControl(c.Name); !ok || got.Name != c.Name {
			t.Errorf("LookupCongestionControl(%q) = %q, %v; want it found", c.Name, got.Name, ok)
		}
		if i > 0 && c.Runs() && !ccs[i-1].Runs() {
			t.Errorf("%q runs but follows %q, which does not; those netemu's TCP runs come first", c.Name, ccs[i-1].Name)
		}
		if !c.Runs() {
			continue
		}
		if !senderGives.covers(c.Needs) {
			t.Errorf("%q needs %+v, more than netemu's sender gives (%+v)", c.Name, c.Needs, senderGives)
		}
		if cc := c.fresh(); cc.name() != c.Name {
			t.Errorf("%q builds an algorithm named %q", c.Name, cc.name())
		}
	}
	if _, ok := LookupCongestionControl("vegas"); ok {
		t.Error(`LookupCongestionControl("vegas") found one; the registry has no vegas`)
	}
	bbr, _ := LookupCongestionControl("bbr")
	if bbr.Runs() || !bbr.Needs.Pacing || !bbr.Needs.RateSamples {
		t.Errorf("bbr runs: %v, needs %+v; want it known by name only, needing pacing and rate samples", bbr.Runs(), bbr.Needs)
	}
	// CongestionControls returns a copy: changing it leaves the registry.
	ccs[0].Name = "changed"
	if CongestionControls()[0].Name != DefaultCongestionControl {
		t.Error("changing CongestionControls' result changed the registry")
	}
}

// The error for a name netemu's TCP does not run keeps its words, and
// lists what it runs.
func TestNewCongestionError(t *testing.T) {
	for name, want := range map[string]string{
		"bbr":   `unknown congestion control "bbr": use cubic or reno`,
		"vegas": `unknown congestion control "vegas": use cubic or reno`,
		"":      `unknown congestion control "": use cubic or reno`,
	} {
		if _, err := newCongestion(name); err == nil || err.Error() != want {
			t.Errorf("newCongestion(%q) error = %v; want %q", name, err, want)
		}
	}
}
