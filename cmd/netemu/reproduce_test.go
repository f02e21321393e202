package main

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
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
