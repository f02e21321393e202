package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/workloads"
)

func runNetemu(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in the one stderr line
	}{
		{[]string{"run", "video"}, `unknown workload "video"`},
		{[]string{"run"}, "which workload"},
		{[]string{"launch"}, `unknown command "launch"`},
		{[]string{"run", "bulk", "--bogus"}, "unknown flag --bogus"},
		{[]string{"run", "bulk", "--rate", "10", "mbps"}, "--rate"},
		{[]string{"run", "bulk", "--rate", "fast"}, "10mbit"},
		{[]string{"run", "bulk", "--rtt", "-5ms"}, "--rtt"},
		{[]string{"run", "bulk", "--rtt", "50"}, "50ms"},
		{[]string{"run", "page", "--conns", "0"}, "--conns 0"},
		{[]string{"run", "bulk", "--size", "-1"}, "--size"},
		{[]string{"run", "bulk", "--queue", "0"}, "--queue"},
		{[]string{"run", "bulk", "--cc", "vegas"}, "--cc"},
		{[]string{"run", "bulk", "--clock", "sundial"}, "--clock"},
		{[]string{"run", "bulk", "--mtu", "0"}, "--mtu"},
		{[]string{"run", "keepalive", "--mode", "often"}, "--mode"},
		{[]string{"run", "nagle", "--nodelay", "maybe"}, "--nodelay"},
		{[]string{"run", "bulk", "--rtt", "10ms,20ms"}, "use netemu sweep"},
		{[]string{"reproduce", "extra"}, `unknown question "extra"; want rtt-fairness, flows`},
		{[]string{"reproduce", "flows", "extra"}, `unexpected argument "extra"`},
		{[]string{"reproduce", "flows", "--seed", "3"}, "reproduce flows: --seed does not apply"},
		{[]string{"reproduce", "flows", "--backend", "kernel"}, "reproduce flows: --backend does not apply"},
		{[]string{"reproduce", "flows", "--runs", "0"}, "want --runs 1 or more"},
		{[]string{"reproduce", "flows", "--plot", "flows.txt"}, "--plot flows.txt: want a file name ending in .svg or .png"},
		{[]string{"reproduce", "flows", "--plot", "/no/such/dir/flows.svg"}, "--plot"},
		{[]string{"reproduce", "--plot", "x.svg"}, "--plot draws a question's picture; name one"},
		{[]string{"reproduce", "--runs", "2", "flows", "--kernel-runs", "0"}, `flows after flags; a question's name comes first: netemu reproduce flows --runs 2 --kernel-runs 0`},
		{[]string{"reproduce", "flows", "--runs", "2", "home-link"}, "reproduce: flows and home-link: one question at a time"},
		{[]string{"run", "bulk", "--qdisc", "sfq"}, `"sfq" is not one netemu has; want fifo, pfifo, bfifo, codel, fq_codel`},
		{[]string{"run", "bulk", "--qdisc", "codel", "--queue", "50"}, "--queue and --qdisc codel both bound the queue"},
		{[]string{"run", "bulk", "--qdisc-down", "codel flows 3"}, `--qdisc-down "codel flows 3": codel: "flows" is not one of its options`},
		{[]string{"run", "bulk", "--qdisc", "fifo,codel", "--rtt", "10ms,20ms"}, "--rtt has 2 values; use netemu sweep"},
		{[]string{"run", "share", "--ccs", "vegas"}, `--ccs "vegas": "vegas" is not one netemu knows`},
		{[]string{"run", "share", "--tcp", "gvisor", "--ccs", "cubic,bbr", "--duration", "100ms"}, "gVisor has cubic and reno"},
		{[]string{"run", "share", "--ccs", "cubic,reno,reno"}, "names 3 congestion controls for 2 flows"},
		{[]string{"run", "share", "--flows", "0"}, "--flows 0: want 1 or more"},
		{[]string{"run", "bulk", "--exact", "--clock", "real"}, "--exact applies to the virtual clock"},
		{[]string{"run", "bulk", "--exact", "--backend", "kernel"}, "--exact does not apply"},
		{[]string{"run", "bulk", "--host-noise", "3"}, `--host-noise "3": want BASE,SPREAD, a fixed time and an exponential draw's mean, each from 0 to 1s, such as 25us,30us`},
		{[]string{"run", "bulk", "--host-noise", "none"}, "--host-noise none: for nodes that take no time give --exact"},
		{[]string{"run", "bulk", "--host-noise", "1us,1us", "--exact"}, "--host-noise and --exact: give one"},
		{[]string{"run", "bulk", "--host-noise", "1us,1us", "--clock", "real"}, "--host-noise applies to the virtual clock"},
		{[]string{"run", "bulk", "--host-noise", "1us,1us", "--backend", "kernel"}, "--host-noise does not apply"},
		{[]string{"reproduce", "home-link", "--host-noise", "loud"}, `reproduce home-link: --host-noise "loud": want BASE,SPREAD`},
		{[]string{"reproduce", "--host-noise", "1us,1us"}, "reproduce: --host-noise applies to a question"},
		{[]string{"reproduce", "--lossy", "--host-noise", "1us,1us"}, "reproduce: --host-noise applies to a question"},
		{[]string{"proxy", "--host-noise", "1us,1us"}, "proxy: --host-noise does not apply: real programs run in real time"},
		{[]string{"toxiproxy", "--exact"}, "toxiproxy: --exact does not apply: real programs run in real time"},
		{[]string{"run", "bulk", "--qdisc", "codel", "--netem", "limit 50"}, "netem's limit and --qdisc codel both bound the queue"},
		{[]string{"run", "bulk", "--qdisc-down", "fifo,codel"}, "takes one queue discipline, not a list"},
		{[]string{"run", "page", "--tls", "1.2"}, "--tls 1.2: no protocol listed runs over TLS"},
		{[]string{"run", "keepalive", "--resume", "both"}, "--resume: TLS sessions resume on fresh connections over TLS"},
		{[]string{"compare", "page", "--proto", "h3"}, "use netemu run page --proto h3 --clock real"},
		{[]string{"sweep", "page", "--rtt", "10ms,20ms", "--waterfall", "x.svg"}, "sweep draws no waterfall"},
		{[]string{"run", "page", "--resume", "both"}, "page has no --resume; keepalive has"},
		{[]string{"run", "page", "--timings", "true"}, "--timings is a switch: write --timings alone to turn it on, or --timings=true"},
		{[]string{"run", "--proto", "h2", "page"}, "--proto is a flag of the page and keepalive workloads; write it after the workload's name"},
		{[]string{"run", "loaded", "--interval", "2s", "--duration", "1s"}, "--interval 2s is longer than --duration 1s"},
		{[]string{"run", "loaded", "--direction", "sideways"}, `--direction "sideways": want down, up or both`},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q",
				strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}

func decode(t testing.TB, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		recs = append(recs, m)
	}
	return recs
}

func TestRunJSON(t *testing.T) {
	code, out, errOut := runNetemu("run", "nagle", "--rtt", "0", "--rate", "unlimited", "--rounds", "10", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	recs := decode(t, out)
	if len(recs) != 2 { // --nodelay both
		t.Fatalf("%d records, want 2 (nodelay false and true)", len(recs))
	}
	for _, k := range []string{"workload", "backend", "clock", "rtt_ms", "rate_bps", "elapsed_ms", "model_ms", "conns", "bytes",
		"trace_hash", "nodelay", "round_ms_median", "round_ms_max", "write", "stalled_rounds"} {
		if _, ok := recs[0][k]; !ok {
			t.Errorf("record lacks %q: %v", k, recs[0])
		}
	}
	if recs[0]["backend"] != "emulated" || recs[0]["clock"] != "virtual" || recs[0]["nodelay"] != false {
		t.Errorf("record %v", recs[0])
	}
	if on, off := recs[0]["round_ms_median"].(float64), recs[1]["round_ms_median"].(float64); on < 40 || off >= 1 {
		t.Errorf("median rounds: nagle on %v ms, off %v ms", on, off)
	}

	code, out, _ = runNetemu("run", "bulk", "--size", "1MiB", "--rate", "20mbit", "--json")
	if code != 0 {
		t.Fatal(out)
	}
	b := decode(t, out)[0]
	if b["goodput_bps"].(float64) <= 0 || b["bytes"].(float64) != 1<<20 || b["mode"] != nil {
		t.Errorf("bulk record %v", b)
	}
}

func TestSweepTable(t *testing.T) {
	code, out, errOut := runNetemu("sweep", "keepalive", "--rtt", "10ms,100ms", "--rate", "10mbit,0", "--mode", "reuse", "--requests", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "elapsed") {
		t.Fatalf("want a header and 4 rows:\n%s", out)
	}
	if !strings.Contains(out, "unlimited") || !strings.Contains(out, "100.0 ms") {
		t.Errorf("table lacks units:\n%s", out)
	}
}

// reproduce --json has a record per reference cell with the reference's
// fields, and bulk's cells are within ±5 % of the published times, each
// one connection carrying 5 MiB. TestReproduceGolden checks that
// reproduce --json prints testdata/reproduce.golden byte for byte, so the
// records are read from there instead of running every cell a second
// time.
func TestReproduceJSON(t *testing.T) {
	out, err := os.ReadFile("testdata/reproduce.golden")
	if err != nil {
		t.Fatal(err)
	}
	recs := decode(t, string(out))
	if len(recs) != 18 {
		t.Fatalf("%d records, want one per reference cell (18)", len(recs))
	}
	withDiff, bulk := 0, 0
	for _, r := range recs {
		if r["reference_ms"] == nil || r["table"] == nil {
			t.Errorf("record lacks reference fields: %v", r)
		}
		if r["diff_pct"] != nil {
			withDiff++
		}
		if r["workload"] == "bulk" {
			bulk++
			if d, _ := r["diff_pct"].(float64); d < -5 || d > 5 || r["conns"] != 1.0 || r["bytes"] != float64(5<<20) {
				t.Errorf("%s, rate %v: %v ms against the reference's %v ms (%+.1f%%), %v conns, %.0f bytes; want within ±5%%, 1 conn, 5 MiB",
					r["table"], r["rate_bps"], r["elapsed_ms"], r["reference_ms"], d, r["conns"], r["bytes"])
			}
		}
	}
	if bulk != 6 {
		t.Errorf("%d bulk records; want 6", bulk)
	}
	// At RTT 0 the virtual clock counts no time: no difference there
	// (keepalive fresh and reuse, nagle off).
	if withDiff != 15 {
		t.Errorf("%d records with a difference; want 15", withDiff)
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("kernel mode needs root (network namespaces, TUN devices)")
	}
}

func TestCompareJSON(t *testing.T) {
	needRoot(t)
	code, out, errOut := runNetemu("compare", "keepalive", "--rtt", "10ms", "--rate", "0", "--requests", "3", "--mode", "reuse", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	recs := decode(t, out)
	if len(recs) != 2 || recs[0]["backend"] != "emulated" || recs[1]["backend"] != "kernel" {
		t.Fatalf("records %v; want emulated then kernel", recs)
	}
	k := recs[1]
	facts, _ := k["kernel"].(map[string]any)
	if facts == nil || facts["kernel"] == "" || facts["cc"] != "cubic" || facts["link"] == nil || k["clock"] != "real" {
		t.Errorf("kernel record lacks facts: %v", k)
	}
	// Four round trips; each of the emulated run's eight packets reaches
	// its host the hosts' noise late (link.DefaultNoise: 25 µs and more,
	// 55 on average).
	if e, kk := recs[0]["elapsed_ms"].(float64), k["elapsed_ms"].(float64); kk < 40 || e < 40.2 || e > 42 {
		t.Errorf("3 reused requests at 10 ms: emulated %v ms (want 40 and the noise of 8 packets, 0.2 to 2 ms), kernel %v ms (want at least 40)", e, kk)
	}
}

func TestCompareTable(t *testing.T) {
	needRoot(t)
	code, out, errOut := runNetemu("compare", "nagle", "--rtt", "0", "--rate", "0", "--rounds", "5", "--nodelay", "false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "emulated vs kernel") || !strings.Contains(out, "tcp_pingpong_thresh") {
		t.Errorf("compare table:\n%s", out)
	}
}

// compare of a workload whose result is more than its time (share: each
// flow's goodput, Jain's index) prints both backends' summaries.
func TestCompareDetails(t *testing.T) {
	needRoot(t)
	code, out, errOut := runNetemu("compare", "share", "--ccs", "cubic,reno", "--duration", "500ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "down, cubic,reno: emulated Jain ") || !strings.Contains(out, "; kernel Jain ") {
		t.Errorf("compare share shows no per-backend details:\n%s", out)
	}
}

func TestKernelBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "bulk", "--backend", "vm"}, "--backend"},
		{[]string{"run", "bulk", "--backend", "kernel", "--link", "wire"}, "--link"},
		{[]string{"compare"}, "which workload"},
	} {
		code, _, errOut := runNetemu(c.args...)
		if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stderr %q; want exit 2 and one line with %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
	needRoot(t)
	code, _, errOut := runNetemu("run", "bulk", "--backend", "kernel", "--link", "netem")
	if code != 2 || !strings.Contains(errOut, "sch_netem") || strings.Count(errOut, "\n") != 1 {
		if !strings.Contains(errOut, "sch_netem") && code == 0 {
			t.Skip("this kernel has sch_netem")
		}
		t.Errorf("--link netem without sch_netem: exit %d, %q", code, errOut)
	}
}

// Flags that would be ignored are errors, not silence.
func TestFlagsThatDoNotApply(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"reproduce", "--cc", "reno"}, "--cc does not apply"},
		{[]string{"reproduce", "--rtt", "10ms"}, "--rtt does not apply"},
		{[]string{"run", "bulk", "--link", "tun"}, "--link does not apply"},
		{[]string{"run", "bulk", "--backend", "kernel", "--clock", "virtual"}, "--clock does not apply"},
		{[]string{"run", "bulk", "--backend", "kernel", "--seed", "3"}, "--seed does not apply"},
		{[]string{"compare", "bulk", "--clock", "real"}, "--clock does not apply"},
		{[]string{"compare", "bulk", "--backend", "kernel"}, "--backend does not apply"},
		// netemu's TCP, the default, runs without the link's delayed-ACK
		// stage: a stage it would ignore, or a list of them that would
		// repeat its cases, is refused.
		{[]string{"run", "bulk", "--delack", "40ms"}, "--delack does not apply: netemu's TCP delays its own ACKs"},
		{[]string{"sweep", "bulk", "--delack", "0,40ms"}, "--delack does not apply"},
		{[]string{"sweep", "bulk", "--tcp", "netemu,gvisor", "--delack", "0,40ms"}, "--delack does not apply: netemu's TCP runs without the link's delayed-ACK stage"},
	} {
		code, _, errOut := runNetemu(c.args...)
		if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, %q; want exit 2 and %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
	// What netemu's TCP runs anyway is not refused: the stage off, and a
	// stage for gVisor's TCP beside it.
	for _, args := range [][]string{
		{"run", "bulk", "--size", "100KB", "--delack", "0"},
		{"sweep", "bulk", "--size", "100KB", "--tcp", "netemu,gvisor", "--delack", "40ms"},
	} {
		if code, _, errOut := runNetemu(args...); code != 0 {
			t.Errorf("netemu %s: exit %d, %q; want it to run", strings.Join(args, " "), code, errOut)
		}
	}
}

// Sweeping the queue and the delayed ACK names each case apart, in the
// table and in file names.
func TestSweepQueueAndDelack(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runNetemu("sweep", "bulk", "--size", "100KB", "--queue", "4,1000", "--delack", "0,40ms", "--tcp", "gvisor", "--pcap", dir+"/q.pcap")
	if code != 0 {
		t.Fatal(errOut)
	}
	for _, want := range []string{"queue 4, delack 0", "queue 1000, delack 40.0 ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	files, _ := filepath.Glob(dir + "/q-*.pcap")
	if len(files) != 4 {
		t.Errorf("pcap files %v; want one per case (4)", files)
	}
}

// --qdisc sweeps like the other link flags, and the records say which
// qdisc ran (nothing for the FIFO, whose queue they give instead);
// --qdisc-down sets the server→client direction's alone. The records'
// fields are checked, not their figures: 100KB will do.
func TestSweepQdisc(t *testing.T) {
	code, out, errOut := runNetemu("sweep", "bulk", "--size", "100KB", "--rate", "10mbit", "--qdisc", "fifo,fq_codel target 2ms", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	recs := decode(t, out)
	if len(recs) != 2 {
		t.Fatalf("%d records; want 2", len(recs))
	}
	if _, ok := recs[0]["qdisc"]; ok || recs[0]["queue_packets"] != float64(1000) {
		t.Errorf("fifo record: qdisc %v, queue_packets %v; want none and 1000", recs[0]["qdisc"], recs[0]["queue_packets"])
	}
	if _, ok := recs[1]["queue_packets"]; recs[1]["qdisc"] != "fq_codel target 2ms" || ok {
		t.Errorf("fq_codel record: qdisc %v, queue_packets %v; want \"fq_codel target 2ms\" and none", recs[1]["qdisc"], recs[1]["queue_packets"])
	}
	code, out, errOut = runNetemu("run", "bulk", "--size", "100KB", "--rate", "10mbit", "--qdisc-down", "codel", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if r := decode(t, out)[0]; r["qdisc_down"] != "codel" || r["qdisc"] != nil {
		t.Errorf("--qdisc-down codel: qdisc %v, qdisc_down %v; want none and codel", r["qdisc"], r["qdisc_down"])
	}
}

// run takes a list of queue disciplines, as it takes a workload's
// variants: a row per discipline, named in the case column.
func TestRunQdiscList(t *testing.T) {
	code, out, errOut := runNetemu("run", "bulk", "--size", "100KB", "--qdisc", "fifo,codel,fq_codel")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines; want a header and 3 rows:\n%s", len(lines), out)
	}
	for i, q := range []string{"fifo", "codel", "fq_codel"} {
		if f := strings.Fields(lines[i+1]); len(f) < 5 || f[4] != q {
			t.Errorf("row %d: %q; want %s in the case column", i+1, lines[i+1], q)
		}
	}
}

func TestBulkOnAnIdealLinkIsValidJSON(t *testing.T) {
	code, out, errOut := runNetemu("run", "bulk", "--rtt", "0", "--rate", "0", "--size", "100KB", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rec := decode(t, out)[0]
	if v, ok := rec["goodput_bps"]; rec["elapsed_ms"].(float64) != 0 || !ok || v != nil {
		t.Errorf("record %v; want elapsed 0 and goodput_bps null: no time passed, so it has no value", rec)
	}
}

// A figure that cannot be computed is "—" in the table, never 0: with
// --reorder 100% every packet skips delay and rate, as netem's do, and
// no time passes.
func TestUncomputableFigureIsADash(t *testing.T) {
	for _, args := range [][]string{{"run", "bulk", "--reorder", "100%", "--size", "100KB"}, {"run", "bulk", "--rtt", "0", "--rate", "0", "--size", "100KB"}} {
		code, out, errOut := runNetemu(args...)
		if code != 0 || !strings.Contains(out, "goodput —") || strings.Contains(out, "0.00 Mbit/s") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want goodput shown as —", args, code, out, errOut)
		}
	}
}

// Every registered workload runs through the command with no code of its
// own in cmd/netemu: run, its JSON record with its own fields, and help.
// What is checked is the record, not its figures, so each runs small: at
// 10mbit, a workload that runs for a --duration (loaded, share: 10 s of
// flows at the link's rate) for a second, one that downloads a --size
// (bulk: 5 MiB) 100KB. At 100mbit with 5 MiB the runs took 24 s of CPU
// under the race detector, loaded and share 12 s each.
func TestEveryWorkload(t *testing.T) {
	_, help, _ := runNetemu("help")
	for _, k := range workloads.Kinds() {
		args := []string{"run", k.Name, "--rtt", "10ms", "--rate", "10mbit", "--json"}
		fs := flag.NewFlagSet(k.Name, flag.ContinueOnError)
		k.Flags(fs)
		if fs.Lookup("duration") != nil {
			args = append(args, "--duration", "1s")
		}
		if fs.Lookup("size") != nil {
			args = append(args, "--size", "100KB")
		}
		code, out, errOut := runNetemu(args...)
		if code != 0 {
			t.Fatalf("run %s: exit %d: %s", k.Name, code, errOut)
		}
		for _, rec := range decode(t, out) {
			if rec["workload"] != k.Name || rec["elapsed_ms"].(float64) <= 0 || len(rec) <= 23 { // 23: the fields every emulated record has
				t.Errorf("run %s: record %v; want the workload's name, a time and its own fields", k.Name, rec)
			}
		}
		if !strings.Contains(help, "\n  "+k.Name+" ") {
			t.Errorf("help does not list %s:\n%s", k.Name, help)
		}
	}
}

// Each command's help lists exactly the shared flags it takes (less
// those it takes but hides: proxy's and shell's --clock, real only), and
// the command refuses the others in one line that says why.
func TestHelpListsWhatTheCommandTakes(t *testing.T) {
	for _, c := range commands {
		if c.Groups == nil && c.Names == nil {
			continue // no shared flags
		}
		_, out, _ := runNetemu("help", c.Name)
		for _, g := range cli.Groups {
			for _, f := range g.Flags() {
				shown := strings.Contains(out, "\n  --"+f+" ")
				want := c.Takes(f) && !slices.Contains(c.Hidden, f)
				if shown != want {
					t.Errorf("help %s lists --%s: %v; want %v", c.Name, f, shown, want)
				}
			}
		}
	}
	for _, c := range []struct{ args, want string }{
		{"run bulk --seeds 3", "run: --seeds does not apply: it is a flag of netemu sweep"},
		{"proxy --forward 8080=127.0.0.1:80 --plot x.svg", "proxy: --plot does not apply: the proxy draws no figure"},
		{"shell --tcp netemu -- true", "shell: --tcp does not apply: the command's own kernel TCP crosses the link"},
		{"compare bulk --backend kernel", "compare: --backend does not apply: compare runs both backends"},
		{"reproduce --rtt 10ms", "reproduce: --rtt does not apply: reproduce runs the reference cells as published (it takes a question's name, --json"},
	} {
		code, out, errOut := runNetemu(strings.Fields(c.args)...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", c.args, code, out, errOut, c.want)
		}
	}
}

// --host-noise sets the emulated nodes' time in place of the default:
// the record names it, and the run takes longer by it.
func TestHostNoiseFlag(t *testing.T) {
	run := func(extra ...string) map[string]any {
		t.Helper()
		code, out, errOut := runNetemu(append([]string{"run", "bulk", "--rtt", "10ms", "--size", "200KB", "--json"}, extra...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return decode(t, out)[0]
	}
	def, slow := run(), run("--host-noise", "300us,300us")
	if def["host_noise"] != "25µs+exp(30µs)" || slow["host_noise"] != "300µs+exp(300µs)" {
		t.Errorf("host_noise %v and %v; want 25µs+exp(30µs) by default and 300µs+exp(300µs) as given", def["host_noise"], slow["host_noise"])
	}
	if d, s := def["elapsed_ms"].(float64), slow["elapsed_ms"].(float64); s <= d {
		t.Errorf("elapsed %v ms with nodes of 600 µs a packet, %v ms by default; want longer", s, d)
	}
}

// reproduce QUESTION --host-noise runs the question's emulated cells
// with those nodes: every emulated record names them.
func TestReproduceHostNoise(t *testing.T) {
	code, out, errOut := runNetemu("reproduce", "home-link", "--runs", "1", "--kernel-runs", "0", "--json", "--host-noise", "35us,40us")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	n := 0
	for _, r := range decode(t, out) {
		if r["backend"] != "emulated" || r["workload"] == nil { // a run's record, not a cell's summary
			continue
		}
		n++
		if r["host_noise"] != "35µs+exp(40µs)" {
			t.Errorf("an emulated record's host_noise is %v; want 35µs+exp(40µs)", r["host_noise"])
		}
	}
	if n == 0 {
		t.Fatalf("no emulated record in:\n%s", out)
	}
}
