package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netemu/netemu/cli"
)

const testStudy = `# bulk over lossy paths
workload: bulk
size: 50KB
rtt: [10ms, 50ms]
rate: 10mbit
loss: [0, 2%]
seeds: 1-2
`

// A study file is the sweep its flags make, and its name and hash are in
// every record, with one worker or two.
func TestSpec(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "study.yaml")
	os.WriteFile(path, []byte(testStudy), 0o644)
	flags := runOK(t, sweepArgs("--seeds", "1-2")...)
	if got := runOK(t, "sweep", "--spec", path); got != flags {
		t.Errorf("--spec prints\n%s\nthe same flags print\n%s", got, flags)
	}
	sum := sha256.Sum256([]byte(testStudy))
	for _, jobs := range []string{"1", "2"} {
		recs := decode(t, runOK(t, "sweep", "--json", "--jobs", jobs, "--spec", path))
		if len(recs) != 4*3 {
			t.Fatalf("%d records; want 12", len(recs))
		}
		for _, r := range recs {
			if r["study"] != "study.yaml" || r["study_sha256"] != hex.EncodeToString(sum[:]) {
				t.Fatalf("--jobs %s: record without the study's name and hash: %v", jobs, r)
			}
		}
	}
}

func TestSpecBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	good := write("good.yaml", testStudy)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "--spec", filepath.Join(dir, "none.yaml")}, "no such file"},
		{[]string{"sweep", "--spec", good, "--rtt", "5ms"}, `"--rtt 5ms" belongs in the study file`},
		{[]string{"sweep", "--spec", write("a.yaml", "rtt: 10ms\n")}, `which workload? add a line like "workload: bulk"`},
		{[]string{"sweep", "--spec", write("b.yaml", "workload: bulk\nrtt: {a: 1}\n")}, "b.yaml:2: rtt: want a value or a list"},
		{[]string{"sweep", "--spec", write("c.yaml", "workload: bulk\nbogus: 1\n")}, "unknown flag --bogus"},
		{[]string{"sweep", "--spec", write("d.yaml", "workload: bulk\njobs: 4\n")}, "give --jobs on the command line"},
		{[]string{"sweep", "--spec", write("e.yaml", "workload: bulk\nrtt: 1ms\nrtt: 2ms\n")}, "rtt is given twice"},
		{[]string{"sweep", "--spec", write("f.yaml", "workload: [bulk\n")}, "f.yaml"},
		{[]string{"sweep", "--spec", write("g.yaml", "- bulk\n")}, "want a mapping of flag names"},
		{[]string{"sweep", "--spec", write("h.yaml", "workload: bulk\nrate: 10 pigeons\n")}, "h.yaml"},
		{[]string{"run", "bulk", "--spec", good}, "--spec does not apply"},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q",
				strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}

// A study file cannot reach past what it measures: a key that is not a
// flag's name (an "=" smuggling --out or --pcap), a flag that writes a
// file, a second document, a quoted value with commas are refused, and
// nothing is written.
func TestSpecSmuggling(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	victim := write("victim.txt", "keep me\n")
	for _, c := range []struct {
		name, text, want string
	}{
		{"out.yaml", "workload: bulk\n\"out=" + filepath.Join(dir, "x.jsonl") + "\": \"--rtt=10ms\"\n", `out.yaml:2: "out=`},
		{"pcap.yaml", "workload: bulk\n\"pcap=" + victim + "\": 10ms\n", "is not a flag's name"},
		{"dash.yaml", "workload: bulk\n-rtt: 10ms\n", "is not a flag's name"},
		{"pcap2.yaml", "workload: bulk\npcap: " + victim + "\n", "pcap2.yaml:2: pcap writes a file"},
		{"timeline.yaml", "workload: bulk\ntimeline: " + victim + "\n", "give --timeline on the command line"},
		{"two.yaml", "workload: bulk\n---\nrtt: [10ms, 20ms]\n", "two.yaml:2: a second YAML document"},
		{"quoted.yaml", "workload: bulk\nrtt: \"10ms,20ms\"\n", `quoted.yaml:2: rtt: "10ms,20ms" is quoted, so it is one value`},
		{"elem.yaml", "workload: bulk\nrtt:\n  - 10ms,20ms\n", "elem.yaml:3: rtt: \"10ms,20ms\": an element of a list is one value"},
	} {
		code, out, errOut := runNetemu("sweep", "--spec", write(c.name, c.text))
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", c.name, code, out, errOut, c.want)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("a study file overwrote %s: %q", victim, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.jsonl")); err == nil {
		t.Errorf("a study file wrote x.jsonl through its key")
	}
	// The unquoted form is a list, as on the command line: two cells.
	plain := write("plain.yaml", "workload: bulk\nsize: 50KB\nrtt: 10ms,50ms\n")
	if got, want := runOK(t, "sweep", "--spec", plain), runOK(t, "sweep", "bulk", "--size", "50KB", "--rtt", "10ms,50ms"); got != want {
		t.Errorf("rtt: 10ms,50ms prints\n%s\n--rtt 10ms,50ms prints\n%s", got, want)
	}
}

// Cells are bounded like seeds, and counted before any is built: lists
// whose product is too large are refused at once, in one line, and so
// is a single list or a study file too long.
func TestCellsCapped(t *testing.T) {
	many := func(n int, unit string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(itoa(i+1) + unit)
		}
		return b.String()
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, []byte("workload: bulk\nrtt: ["+many(cli.MaxCells+1, "ms")+"]\n"), 0o644)
	huge := filepath.Join(dir, "huge.yaml") // 4.5 MB, over the bound
	os.WriteFile(huge, []byte("workload: bulk\nrtt: ["+strings.Repeat("100ms,", 750_000)+"1ms]\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "bulk", "--rtt", many(3000, "ms"), "--queue", many(3000, ""), "--rate", many(3000, "mbit")}, "--rtt 3000 × --rate 3000 × --queue 3000 make more than 100000 cells"},
		{[]string{"sweep", "bulk", "--rtt", many(cli.MaxCells+1, "ms")}, "100001 values; a sweep has at most 100000 cells"},
		{[]string{"sweep", "--spec", big}, "big.yaml:2: rtt: 100001 values"},
		{[]string{"sweep", "--spec", huge}, "longer than 4 MiB"},
		{[]string{"sweep", "bulk", "--rtt", many(11, "ms"), "--seeds", "1-100000"}, "is 1100000 runs; want at most 1000000"},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) || len(errOut) > 400 {
			t.Errorf("%.60q: exit %d, stdout %q, stderr %.300q; want exit 2 and one short line containing %q", c.args, code, out, errOut, c.want)
		}
	}
}

// A study file gives only what shapes the runs: every flag of a file the
// sweep writes, or of how it runs and prints, is refused in one line
// that names it and sends it to the command line, and nothing is
// written; a value never becomes a flag, even a switch's (trace-once:
// --pcap=FILE), and a switch takes only true or false.
func TestSpecOnlyShapesTheRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	victim := write("victim.txt", "keep me\n")
	tr := write("a.trace", "1\n")
	target := filepath.Join(dir, "new.out")
	for _, key := range []string{"pcap", "timeline", "mm-log-up", "mm-log-down", "plot", "waterfall", "json", "out", "jobs", "continue", "shard", "spec"} {
		for _, val := range []string{target, victim} {
			code, out, errOut := runNetemu("sweep", "--spec", write(key+".yaml", "workload: bulk\nsize: 50KB\n"+key+": "+val+"\n"))
			if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, key+".yaml:3: "+key) || !strings.Contains(errOut, "give --"+key+" on the command line") {
				t.Errorf("%s: %s: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s and the command line", key, val, code, out, errOut, key)
			}
		}
	}
	for _, c := range []struct{ name, text, want string }{
		{"once.yaml", "workload: bulk\nsize: 50KB\ntcp: netemu\ntrace-down: " + tr + "\ntrace-once: --pcap=" + victim + "\n", `once.yaml:5: trace-once is a switch: want trace-once: true or trace-once: false, not "--pcap=`},
		{"once2.yaml", "workload: bulk\nsize: 50KB\ntcp: netemu\ntrace-down: " + tr + "\ntrace-once: --pcap=" + target + "\n", "trace-once is a switch"},
		{"jobs.yaml", "workload: bulk\nsize: 50KB\ntrace-once: --jobs=12\n", "trace-once is a switch"},
		{"list.yaml", "workload: bulk\nsize: 50KB\ntrace-once: [true, false]\n", `not "true,false"`},
		{"work.yaml", "workload: --pcap=" + victim + "\n", "is not a workload's name"},
	} {
		code, out, errOut := runNetemu("sweep", "--spec", write(c.name, c.text))
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", c.name, code, out, errOut, c.want)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("a study file overwrote %s: %q", victim, b)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("a study file wrote %s", target)
	}
	// Run-shaping keys run, a switch with its boolean; the files come
	// from the command line, which may not give what the study does.
	good := write("good.yaml", "workload: bulk\nsize: 50KB\ntcp: netemu\ntrace-down: "+tr+"\ntrace-once: false\nseeds: 1\n")
	log := filepath.Join(dir, "down.log")
	if got, want := runOK(t, "sweep", "--spec", good, "--mm-log-down", log), runOK(t, "sweep", "bulk", "--size", "50KB", "--tcp", "netemu", "--trace-down", tr, "--seeds", "1"); got != want {
		t.Errorf("the study prints\n%s\nits flags print\n%s", got, want)
	}
	if st, err := os.Stat(log); err != nil || st.Size() == 0 {
		t.Errorf("--mm-log-down on the command line of a study: %v", err)
	}
	code, _, errOut := runNetemu("sweep", "--spec", good, "--trace-once")
	if code != 2 || !strings.Contains(errOut, `"--trace-once" belongs in the study file`) || !strings.Contains(errOut, "--mm-log-down") {
		t.Errorf("--trace-once beside a study: exit %d, %q; want exit 2, sent to the study file", code, errOut)
	}
}
