package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run share on a dumbbell gives each flow's goodput, their shares and
// Jain's index, and the bottleneck's drops and queueing delay; the same
// command gives the same record.
func TestTopologyRun(t *testing.T) {
	args := []string{"run", "share", "--topology", "dumbbell:2", "--access-rtt", "10ms,100ms", "--rate", "20mbit", "--queue", "100", "--duration", "3s", "--json"}
	code, out, errOut := runNetemu(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rec struct {
		Topology    string    `json:"topology"`
		FlowGoodput []float64 `json:"flow_goodput_bps"`
		Share       []float64 `json:"flow_share"`
		Jain        float64   `json:"jain_index"`
		Flows       []struct {
			Name  string  `json:"name"`
			RTTMs float64 `json:"rtt_ms"`
		} `json:"flows"`
		Links []struct {
			Link    string            `json:"link"`
			Dir     string            `json:"dir"`
			Dropped uint64            `json:"dropped"`
			DropsBy map[string]uint64 `json:"drops_by"`
			Q99     float64           `json:"queue_delay_p99_ms"`
		} `json:"links"`
		Trace string `json:"trace_hash"`
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rec.FlowGoodput) != 2 || rec.FlowGoodput[0] <= 0 || rec.FlowGoodput[1] <= 0 || rec.Share[0]+rec.Share[1] < 0.999 || rec.Jain <= 0.5 || rec.Jain > 1 {
		t.Errorf("flows %v, shares %v, Jain %v", rec.FlowGoodput, rec.Share, rec.Jain)
	}
	// The access round trips add to the bottleneck's 50 ms.
	if len(rec.Flows) != 2 || rec.Flows[0].Name != "c1>s1" || rec.Flows[0].RTTMs != 60 || rec.Flows[1].RTTMs != 150 {
		t.Errorf("flows %+v; want c1>s1 at 60 ms and c2>s2 at 150 ms", rec.Flows)
	}
	// The data flows from the servers: the bottleneck's right>left
	// direction queues and drops, and nothing else does.
	for _, l := range rec.Links {
		busy := l.Link == "bottleneck" && l.Dir == "right>left"
		if busy != (l.Dropped > 0) || busy && (l.DropsBy["queue-full"] != l.Dropped || l.Q99 < 10) {
			t.Errorf("link %s %s: %d dropped (%v), queue p99 %v ms", l.Link, l.Dir, l.Dropped, l.DropsBy, l.Q99)
		}
	}
	if _, again, _ := runNetemu(args...); again != out {
		t.Errorf("a second run printed another record:\n%s\nwant\n%s", again, out)
	}
}

// The table has a row per flow and per link direction under the run's.
func TestTopologyTable(t *testing.T) {
	code, out, errOut := runNetemu("run", "bulk", "--topology", "chain:2", "--size", "200KB", "--rate", "10mbit")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"chain:2, Jain's index", "a0>b0", "a1>b1", "a2>b2", "hop1", "hop2", "queue p99"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table has no %q:\n%s", want, out)
		}
	}
}

// Topology flags that cannot run say why, in one line, with exit 2.
func TestTopologyBadInput(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"run bulk --topology ring:3", `--topology "ring:3": want dumbbell:N, star:N or chain:N`},
		{"run bulk --topology dumbbell:0", "want dumbbell:N with N a count of 1 or more"},
		{"run bulk --topology dumbbell:300", "601 links; want at most 512"},
		{"run bulk --access-rtt 3ms", "add --topology dumbbell:N"},
		{"run bulk --topology star:3 --access-rtt 3ms", "does not apply to --topology star:3"},
		{"run bulk --topology dumbbell:2 --access-rtt 1ms,2ms,3ms", "3 round trips for 2 clients"},
		{"run bulk --topology dumbbell:2 --access-rtt -1ms", "negative"},
		{"explain bulk --topology star:2", "topologies run with netemu run, sweep and compare"},
		{"run bulk --topology star:2 --backend kernel --link netem", "a topology's links run through TUN devices in kernel mode"},
		{"compare bulk --topology star:2 --link netem", "a topology's links run through TUN devices in kernel mode"},
	} {
		code, out, errOut := runNetemu(strings.Fields(c.args)...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", c.args, code, out, errOut, c.want)
		}
	}
}

// A topology file with two routers and four hosts runs with run and
// sweep: each flow its own workload and start, the link marked flags
// shaped by the command line.
func TestTopologyFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "two.yaml")
	os.WriteFile(file, []byte(`hosts: [c1, c2, s1, s2]
routers: [r1, r2]
links:
  - {from: c1, to: r1, delay: 2ms}
  - {from: c2, to: r1, delay: 20ms}
  - {from: r1, to: r2, name: core, flags: true}
  - {from: r2, to: s1}
  - {from: r2, to: s2, netem: "delay 5ms loss 1%"}
flows:
  - {from: c1, to: s1, workload: bulk, size: 300KB}
  - {from: c2, to: s2, workload: share, duration: 2s, start: 500ms}
`), 0o644)
	code, out, errOut := runNetemu("sweep", "--topology", file, "--rate", "10mbit,20mbit", "--queue", "50", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d records; want 2, one per rate:\n%s", len(lines), out)
	}
	for i, line := range lines {
		var rec struct {
			Rate  float64 `json:"rate_bps"`
			Flows []struct {
				Name      string  `json:"name"`
				Workload  string  `json:"workload"`
				RTTMs     float64 `json:"rtt_ms"`
				ElapsedMs float64 `json:"elapsed_ms"`
			} `json:"flows"`
			Links []struct {
				Link        string  `json:"link"`
				Utilisation float64 `json:"utilisation"`
			} `json:"links"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		f := rec.Flows
		// The core's delay is --rtt's default, 50 ms; the access links add theirs.
		if len(f) != 2 || f[0].Workload != "bulk" || f[1].Workload != "share" || f[0].RTTMs != 54 || f[1].RTTMs != 100 || f[1].ElapsedMs < 2000 || f[1].ElapsedMs > 3000 {
			t.Errorf("record %d: flows %+v", i, f)
		}
		if rec.Rate != []float64{10e6, 20e6}[i] {
			t.Errorf("record %d: rate %v", i, rec.Rate)
		}
	}
}

// A topology file's faults are named by file and line, exit 2.
func TestTopologyFileErrors(t *testing.T) {
	dir := t.TempDir()
	base := `hosts: [a, b]
routers: [r1, r2]
links:
  - {from: a, to: r1}
  - {from: r1, to: r2}
  - {from: r2, to: b}
flows:
  - {from: a, to: b, workload: bulk}
`
	for _, c := range []struct{ name, text, want string }{
		{"unknown key", strings.Replace(base, "flows:", "flow:", 1), `two.yaml:7: unknown key "flow"`},
		{"unknown host", strings.Replace(base, "{from: r2, to: b}", "{from: r2, to: c}", 1), `link r2-c joins "c", which is no host or router`},
		{"duplicate", strings.Replace(base, "[r1, r2]", "[r1, a]", 1), `"a" names a host and a router`},
		{"self", strings.Replace(base, "{from: r1, to: r2}", "{from: r1, to: r1}", 1), "joins r1 to itself"},
		{"no path", strings.Replace(base, "  - {from: r1, to: r2}\n", "", 1), "has no path to host"},
		{"loop", base + "routes:\n  - {at: r2, to: b, via: r1}\n", "the routes to host b loop"},
		{"address", strings.Replace(base, "[a, b]", "[a, {name: b, addr: 10.0.0.2}]", 1), "outside 198.18.0.0/15"},
		{"link word", strings.Replace(base, "{from: a, to: r1}", "{from: a, to: r1, rtt: 5ms}", 1), `two.yaml:4: unknown key "rtt"`},
		{"flow option", strings.Replace(base, "workload: bulk}", "workload: bulk, sizee: 1MB}", 1), "two.yaml:8: bulk has no sizee"},
		{"flow host", strings.Replace(base, "{from: a, to: b,", "{from: a, to: r1,", 1), "two.yaml:8: flow a>r1"},
		{"netem twice", strings.Replace(base, "{from: a, to: r1}", `{from: a, to: r1, delay: 5ms, netem: "delay 5ms"}`, 1), "delay and netem's delay both set the delay"},
		{"flags given, nothing marked", base, "--rate does not apply: no link of two.yaml takes"},
	} {
		file := filepath.Join(dir, "two.yaml")
		os.WriteFile(file, []byte(c.text), 0o644)
		args := []string{"run", "--topology", file}
		if c.name == "flags given, nothing marked" {
			args = append(args, "--rate", "5mbit")
		}
		code, out, errOut := runNetemu(args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", c.name, code, out, errOut, c.want)
		}
	}
	if code, _, errOut := runNetemu("run", "bulk", "--topology", filepath.Join(dir, "two.yaml")); code != 2 || !strings.Contains(errOut, "gives each flow its workload; drop bulk") {
		t.Errorf("a workload named with a topology file: exit %d, %q", code, errOut)
	}
}
