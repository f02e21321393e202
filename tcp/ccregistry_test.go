package tcp

import (
	"slices"
	"strings"
	"testing"
)

// The registry lists each algorithm once, the default first, those
// netemu's TCP runs before those it knows by name only; each one it runs
// builds an instance of its own name and needs no more than the sender
// gives, and asks for pacing (by its init) exactly when its Needs say
// so.
func TestCongestionControlRegistry(t *testing.T) {
	ccs := CongestionControls()
	var names []string
	for _, c := range ccs {
		names = append(names, c.Name)
	}
	// Those of today come first, in their order; an algorithm added
	// later comes after them.
	if want := []string{"cubic", "reno", "bbr"}; len(names) < len(want) || !slices.Equal(names[:len(want)], want) {
		t.Fatalf("CongestionControls() names %v; want %v first", names, want)
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
		cc := c.fresh()
		if cc.name() != c.Name {
			t.Errorf("%q builds an algorithm named %q", c.Name, cc.name())
		}
		conn := newTestConn(250)
		conn.rng = fixedRand(0)
		cc.init(&conn)
		if conn.pacingNeeded != c.Needs.Pacing {
			t.Errorf("%q: init asks for pacing: %v; its Needs.Pacing is %v", c.Name, conn.pacingNeeded, c.Needs.Pacing)
		}
		if _, ok := cc.(rateController); ok != c.Needs.RateSamples {
			t.Errorf("%q takes rate samples (.cong_control): %v; its Needs.RateSamples is %v", c.Name, ok, c.Needs.RateSamples)
		}
	}
	if _, ok := LookupCongestionControl("vegas"); ok {
		t.Error(`LookupCongestionControl("vegas") found one; the registry has no vegas`)
	}
	bbr, _ := LookupCongestionControl("bbr")
	if !bbr.Runs() || !bbr.Needs.Pacing || !bbr.Needs.RateSamples {
		t.Errorf("bbr runs: %v, needs %+v; want it run, needing pacing and rate samples", bbr.Runs(), bbr.Needs)
	}
	// CongestionControls returns a copy: changing it leaves the registry.
	ccs[0].Name = "changed"
	if CongestionControls()[0].Name != DefaultCongestionControl {
		t.Error("changing CongestionControls' result changed the registry")
	}
}

// The error for a name netemu's TCP does not run keeps its words, and
// lists what it runs, the registry's first ones first.
func TestNewCongestionError(t *testing.T) {
	for name, want := range map[string]string{
		"vegas": `unknown congestion control "vegas": use cubic, reno`,
		"":      `unknown congestion control "": use cubic, reno`,
	} {
		if _, err := newCongestion(name); err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), " or ") {
			t.Errorf("newCongestion(%q) error = %v; want it to start %q and end with \" or\" and the last", name, err, want)
		}
	}
}
