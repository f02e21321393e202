//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// One sweep writes a results file at a time: while one holds it, a
// second sweep on it is refused and changes nothing.
func TestResultsFileLocked(t *testing.T) {
	part := filepath.Join(t.TempDir(), "p.jsonl")
	grid := sweepArgs("--seeds", "1-2")
	runOK(t, append(grid, "--out", part)...)
	b, _ := os.ReadFile(part)
	os.WriteFile(part, b[:len(b)-10], 0o644) // interrupted: --continue would go on
	cut, _ := os.ReadFile(part)
	f, err := os.OpenFile(part, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil { // the first sweep, still writing
		t.Fatal(err)
	}
	code, _, errOut := runNetemu(append(grid, "--out", part, "--continue")...)
	after, _ := os.ReadFile(part)
	if code != 2 || !strings.Contains(errOut, "another netemu sweep is writing it") || !bytes.Equal(after, cut) {
		t.Errorf("a second sweep on a locked --out: exit %d, stderr %q, file changed %v; want exit 2 and the lock named", code, errOut, !bytes.Equal(after, cut))
	}
}
