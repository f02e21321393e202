package main

import (
	"reflect"
	"strings"
	"testing"
)

// `explain bulk --loss 2%`, the case of issue #26: the time the losses
// cost is loss recovery, not request round trips, for both TCPs; the
// record says how each lost segment was repaired. Virtual-clock figures,
// exact.
func TestExplainLoss(t *testing.T) {
	for _, c := range []struct {
		tcp  string
		ms   map[string]any
		rest map[string]any
	}{
		{"gvisor", map[string]any{
			"serialization": 4451.4024, "handshake round trips": 50.0, "request round trips": 17126.752827, "delayed-ACK holds": 40.0,
			"fast retransmit, RACK": 7129.351952, "tail-loss probes": 0.0, "retransmission timeouts": 0.0, "other (endpoints)": 0.0,
		}, map[string]any{
			"delayed_acks": 97.0, "delayed_ms": 3880.0, "retransmits": 85.0, "drops": 138.0, "lost_repaired": map[string]any{"fast retransmit, RACK": 83.0},
			"tail_loss_probes": 0.0, "timeouts": 0.0, "timeouts_unsure": 0.0, "retransmits_unneeded": 0.0, "recoveries": 69.0,
		}},
		{"netemu", map[string]any{
			"serialization": 4429.4432, "handshake round trips": 50.0, "request round trips": 14300.142319, "delayed-ACK holds": 0.0,
			"fast retransmit, RACK": 6617.871508, "tail-loss probes": 0.0, "retransmission timeouts": 0.0, "other (endpoints)": 0.0,
		}, map[string]any{
			"delayed_acks": 0.0, "delayed_ms": 0.0, "retransmits": 82.0, "drops": 135.0, "lost_repaired": map[string]any{"fast retransmit, RACK": 82.0},
			"tail_loss_probes": 0.0, "timeouts": 0.0, "timeouts_unsure": 0.0, "retransmits_unneeded": 0.0, "recoveries": 61.0,
		}},
	} {
		code, out, errOut := runCmd("explain", "bulk", "--loss", "2%", "--tcp", c.tcp, "--json")
		if code != 0 {
			t.Fatal(errOut)
		}
		ex := decode(t, out)[0]["explain"].(map[string]any)
		if !reflect.DeepEqual(ex["ms"], c.ms) {
			t.Errorf("%s: ms %v\nwant %v", c.tcp, ex["ms"], c.ms)
		}
		for k, v := range c.rest {
			if !reflect.DeepEqual(ex[k], v) {
				t.Errorf("%s: %s %v, want %v", c.tcp, k, ex[k], v)
			}
		}
	}
	code, out, errOut := runCmd("explain", "bulk", "--loss", "2%")
	if code != 0 {
		t.Fatal(errOut)
	}
	for _, want := range []string{
		"      fast retransmit, RACK  7129.4 ms  24.8%\n",
		"; 97 ACKs delayed (3880.0 ms in all, 40.0 ms of it with nothing else under way);",
		"\n  loss recovery: 83 lost segments sent again, 83 by fast retransmit or RACK\n",
		"\n  69 recoveries cut the congestion window; the rounds sent at the smaller window stay in request round trips (explain cannot separate what the cut cost)\n",
		"\n  delayed ACKs (first 6 of 97):\n    at  861.3 ms  ACK from 198.18.0.1:41409 held 40.0 ms, released by the delayed-ACK timer\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain bulk --loss 2%% lacks %q:\n%s", want, out)
		}
	}
}

// A lossless run says nothing of loss recovery but the empty rows.
func TestExplainLosslessSaysNoLoss(t *testing.T) {
	code, out, errOut := runCmd("explain", "bulk", "--size", "1MiB")
	if code != 0 {
		t.Fatal(errOut)
	}
	for _, absent := range []string{"loss recovery", "recoveries", "repaired nothing", "could as well"} {
		if strings.Contains(out, absent) {
			t.Errorf("lossless explain says %q:\n%s", absent, out)
		}
	}
	for _, want := range []string{"      fast retransmit, RACK         0   0.0%\n", "    retransmission timeouts         0   0.0%\n", "; 0 ACKs delayed (0 in all);"} {
		if !strings.Contains(out, want) {
			t.Errorf("lossless explain lacks %q:\n%s", want, out)
		}
	}
}
