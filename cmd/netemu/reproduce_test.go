package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/netemu/netemu/cli"
)

var update = flag.Bool("update", false, "rewrite testdata/reproduce.golden from this build")

// Every reference cell on the virtual clock, pinned: each record of
// `netemu reproduce --json` (elapsed time to the nanosecond, trace
// SHA-256, every counter) must equal the golden file byte for byte. A
// change that moves a result regenerates it with -update, and the diff
// shows which cells moved. The command runs as a process of its own,
// without the race detector (netemuBin says why).
func TestReproduceGolden(t *testing.T) {
	t.Parallel()
	code, out, errOut := runBin(t, "reproduce", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	compareGolden(t, "testdata/reproduce.golden", out)
}

// compareGolden checks out against the golden file line by line, or
// rewrites the file with -update.
func compareGolden(t *testing.T, golden, out string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (create it with go test ./cmd/netemu -run Golden -update)", err)
	}
	got, wantLines := strings.Split(out, "\n"), strings.Split(string(want), "\n")
	if len(got) != len(wantLines) {
		t.Fatalf("%d records, %s has %d", len(got)-1, golden, len(wantLines)-1)
	}
	for i := range got {
		if got[i] != wantLines[i] {
			t.Errorf("record %d differs from %s:\n got: %s\nwant: %s", i+1, golden, got[i], wantLines[i])
		}
	}
	if !bytes.Equal([]byte(out), want) {
		t.Errorf("output differs from %s", golden)
	}
}

// The lossy table's emulated side, pinned like the reference cells: every
// run's record (seeds 1 to 3) and every summary of `netemu reproduce
// --lossy --runs 3 --kernel-runs 0 --json` equal testdata/lossy.golden.
// Like TestReproduceGolden it runs the command built without the race
// detector: its 57 runs took 80 s of CPU under it, 2 s without.
func TestLossyGolden(t *testing.T) {
	t.Parallel()
	code, out, errOut := runBin(t, "reproduce", "--lossy", "--runs", "3", "--kernel-runs", "0", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	compareGolden(t, "testdata/lossy.golden", out)
}

// Each question of netemu reproduce NAME on the emulator, pinned: every
// run's record and every cell's summary of `netemu reproduce NAME --runs
// 1 --kernel-runs 0 --json` equal testdata/question-NAME.golden.
//
// home-link's records are pinned without their trace hash: its page load
// runs beside other flows' goroutines, and net/http's client hands the
// page's resources to its connections in the order its goroutines run,
// which the virtual clock does not fix. Every instant and count is the
// same from run to run (the resources are of one size); which bytes
// ride which connection is not.
func TestQuestionsGolden(t *testing.T) {
	t.Parallel()
	for _, name := range cli.QuestionNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runBin(t, "reproduce", name, "--runs", "1", "--kernel-runs", "0", "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if name == "home-link" {
				out = traceHash.ReplaceAllString(out, `"trace_hash":"-"`)
			}
			compareGolden(t, "testdata/question-"+name+".golden", out)
		})
	}
}

// traceHash matches a record's trace hash.
var traceHash = regexp.MustCompile(`"trace_hash":"[0-9a-f]*"`)

// A question's table names both backends' columns and its picture is
// written; without kernel runs the kernel's column says so.
func TestQuestionTableAndPicture(t *testing.T) {
	t.Parallel()
	pic := filepath.Join(t.TempDir(), "parking.svg")
	code, out, errOut := runBin(t, "reproduce", "parking-lot", "--runs", "2", "--kernel-runs", "0", "--plot", pic)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"cubic chain:3", "emulated  kernel", "median of seeds 1–2", "kernel: not measured: --kernel-runs 0", "netemu compare share --topology chain:1"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(pic); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("picture: %v, %d bytes", err, len(b))
	}
	if !strings.Contains(errOut, "wrote "+pic) {
		t.Errorf("stderr %q does not say it wrote %s", errOut, pic)
	}
}
