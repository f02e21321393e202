package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// netemu trace writes mm-link's own example traces, describes a file,
// and writes --out whole or not at all.
func TestTraceCommand(t *testing.T) {
	if out := runOK(t, "trace", "constant", "--rate", "12mbit"); out != "1\n" {
		t.Errorf("trace constant --rate 12mbit = %q; want mm-link's 12 Mbit/s trace, \"1\\n\"", out)
	}
	if out := runOK(t, "trace", "onoff", "--rate", "12mbit", "--on", "3ms", "--off", "2ms"); out != "3\n4\n5\n" {
		t.Errorf("trace onoff = %q; want off for 2 ms, then one opportunity a millisecond for 3 ms", out)
	}
	a := runOK(t, "trace", "walk", "--rate", "10mbit", "--length", "5s", "--step", "100ms", "--seed", "3")
	b := runOK(t, "trace", "walk", "--rate", "10mbit", "--length", "5s", "--step", "100ms", "--seed", "3")
	if a != b || a == "" {
		t.Errorf("trace walk with one seed differs between runs")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "steps.trace")
	code, out, errOut := runNetemu("trace", "steps", "--rates", "12mbit,24mbit", "--step", "2ms", "--out", path)
	got, _ := os.ReadFile(path)
	if code != 0 || out != "" || string(got) != "1\n2\n3\n3\n4\n4\n" || !strings.Contains(errOut, "wrote "+path) {
		t.Errorf("trace steps --out: exit %d, stdout %q, file %q, stderr %q", code, out, got, errOut)
	}
	if out := runOK(t, "trace", "show", path); !strings.HasPrefix(out, "steps.trace: 6 opportunities over 4ms, repeating: mean 18mbit; over 100 ms windows") {
		t.Errorf("trace show = %q", out)
	}
	if out := runOK(t, "trace", "show", "--json", path); !strings.Contains(out, `"opportunities":6`) || !strings.Contains(out, `"mean_bps":18000000`) {
		t.Errorf("trace show --json = %q", out)
	}
	bad := filepath.Join(dir, "bad.trace")
	os.WriteFile(bad, []byte("1\n2\nfive\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"trace"}, "trace: which kind? want constant, onoff, steps, walk, show"},
		{[]string{"trace", "sine"}, `unknown kind "sine"`},
		{[]string{"trace", "constant", "--rate", "0"}, `--rate "0": want a rate above 0`},
		{[]string{"trace", "steps"}, "which rates?"},
		{[]string{"trace", "steps", "--rates", "12mbit,0"}, "end on a rate above 0"},
		{[]string{"trace", "show", bad}, "bad.trace:3: \"five\" is not a whole number of milliseconds"},
		{[]string{"trace", "constant", "--out", filepath.Join(dir, "no", "x.trace")}, "the directory"},
		{[]string{"trace", "constant", "--out", dir}, "is a directory"},
		{[]string{"trace", "onoff", "--on", "2ms", "--off", "1200h"}, "want at most 24h0m0s"},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("the directory holds %d files; want the two written (no temporary left)", len(ents))
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("--out's file: %v, %v; want mode 0644", st, err)
	}
}

// --trace-down and --trace-up make a trace a direction's rate: the
// record names it, a list of traces sweeps, and a file that is not a
// trace is refused with its line.
func TestTraceFlags(t *testing.T) {
	dir := t.TempDir()
	slow, fast := filepath.Join(dir, "slow.trace"), filepath.Join(dir, "fast.trace")
	os.WriteFile(slow, []byte("2\n"), 0o644) // 6 Mbit/s
	os.WriteFile(fast, []byte("1\n1\n"), 0o644)
	out := runOK(t, "run", "bulk", "--size", "1MiB", "--tcp", "netemu", "--rtt", "20ms", "--trace-down", slow, "--json")
	if !strings.Contains(out, `"trace_down":"slow.trace"`) || strings.Contains(out, `"trace_up"`) {
		t.Errorf("run --trace-down: %s; want the record to name the down trace alone", out)
	}
	sweep := []string{"sweep", "bulk", "--size", "1MiB", "--tcp", "netemu", "--rtt", "20ms", "--trace-down", slow + "," + fast}
	table := runOK(t, sweep...)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "trace slow.trace") || !strings.Contains(lines[2], "trace fast.trace") {
		t.Fatalf("sweep over two traces:\n%s\nwant a row for each", table)
	}
	// The 24 Mbit/s trace moves a megabyte more than twice as fast as the
	// 6 Mbit/s one.
	type rec struct {
		Trace   string  `json:"trace_down"`
		Elapsed float64 `json:"elapsed_ms"`
	}
	var recs []rec
	for _, l := range strings.Split(strings.TrimSpace(runOK(t, append(sweep, "--json")...)), "\n") {
		var r rec
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 2 || recs[0].Trace != "slow.trace" || recs[1].Trace != "fast.trace" || recs[1].Elapsed >= recs[0].Elapsed/2 {
		t.Errorf("sweep --json: %+v; want the 24 Mbit/s trace more than twice as fast as the 6 Mbit/s one", recs)
	}
	// explain names the time on the trace as waiting for the link.
	if out := runOK(t, "explain", "bulk", "--size", "200KB", "--tcp", "netemu", "--trace-down", slow); !strings.Contains(out, "waiting for the link's capacity") {
		t.Errorf("explain over a trace:\n%s\nwant the time on the trace named as waiting for the link's capacity", out)
	}
	// --mm-log-down writes mm-link's log of that direction: its
	// opportunities, arrivals and departures.
	logPath := filepath.Join(dir, "down.log")
	runOK(t, "run", "bulk", "--size", "100KB", "--tcp", "netemu", "--trace-down", fast, "--mm-log-down", logPath)
	b, err := os.ReadFile(logPath)
	if log := string(b); err != nil || !strings.HasPrefix(log, "# mahimahi mm-link (Downlink) [fast.trace]") || !strings.Contains(log, " # 1504\n") || !strings.Contains(log, " - 1504 ") {
		t.Errorf("--mm-log-down: %v\n%.300s", err, log)
	}
	// A trace that does not repeat and ends under a transfer: the failure
	// says so.
	code, _, errOut := runNetemu("run", "bulk", "--size", "1MiB", "--trace-down", slow, "--trace-once")
	if code != 1 || !strings.Contains(errOut, "the down (b>a) trace, which does not repeat, ended at 2ms") {
		t.Errorf("run over a one-shot trace that ends: exit %d, stderr %q; want exit 1 and the trace's end named", code, errOut)
	}
	bad := filepath.Join(dir, "bad.trace")
	os.WriteFile(bad, []byte("3\n1\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "d.png"), 0o755)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "bulk", "--trace-down", bad}, "bad.trace:2: 1 comes after 3"},
		{[]string{"run", "bulk", "--trace-up", filepath.Join(dir, "none.trace")}, "no such file"},
		{[]string{"run", "bulk", "--trace-down", slow, "--netem-down", "delay 5ms rate 5mbit"}, "--trace-down and --netem-down's rate both set the rate"},
		{[]string{"run", "bulk", "--trace-once"}, "--trace-once does not apply"},
		{[]string{"run", "bulk", "--rate", "5mbit", "--trace-up", slow, "--trace-down", slow}, "--rate does not apply"},
		{[]string{"run", "bulk", "--trace-down", slow, "--mm-log-down", dir}, "--mm-log-down " + dir + ": is a directory"},
		{[]string{"run", "bulk", "--timeline", dir}, "--timeline " + dir + ": is a directory"},
		{[]string{"run", "bulk", "--plot", filepath.Join(dir, "d.png")}, "--plot " + filepath.Join(dir, "d.png") + ": is a directory"},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stderr %q; want exit 2 and one line containing %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}
