package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file that cannot be written (/dev/full: a full disk) is reported in
// one line and never announced as written; the device is left alone,
// and the run's other files are written and announced.
func TestFullDiskWritesNoWrote(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	tl := filepath.Join(t.TempDir(), "t.csv")
	code, _, errOut := runNetemu("run", "bulk", "--size", "64KiB", "--pcap", "/dev/full", "--timeline", tl)
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != 1 || strings.Contains(errOut, "wrote /dev/full") || !strings.Contains(errOut, "wrote "+tl) ||
		strings.Count(errOut, "no space left on device") != 1 || !strings.HasPrefix(lines[len(lines)-1], "netemu: pcap: ") {
		t.Errorf("--pcap /dev/full: exit %d, stderr %q; want exit 1, one line of the pcap's failure, and only the timeline announced", code, errOut)
	}
	if st, err := os.Stat("/dev/full"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/full after the run: %v, %v", st, err)
	}
	if st, err := os.Stat(tl); err != nil || st.Size() == 0 {
		t.Errorf("the timeline: %v; want it written", err)
	}
}
