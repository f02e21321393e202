package main

import (
	"encoding/json"
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
		Trace string `json:"trace_sha256"`
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
		{"explain bulk --topology star:2", "topologies run with netemu run and sweep"},
		{"run bulk --topology star:2 --backend kernel", "topologies run on the emulator for now"},
	} {
		code, out, errOut := runNetemu(strings.Fields(c.args)...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", c.args, code, out, errOut, c.want)
		}
	}
}
