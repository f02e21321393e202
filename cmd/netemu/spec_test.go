package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testStudy = `# bulk over lossy paths
workload: bulk
size: 200KB
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
		code, out, errOut := runCmd(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q",
				strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}
