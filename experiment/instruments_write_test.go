//go:build linux

package experiment

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// A file that cannot be written (a full disk) is reported in one line
// naming its instrument, and is not left behind, short or empty; the
// run's other files are complete. A path that names a device is written
// to, never removed.
func TestFailedWriteLeavesNoFile(t *testing.T) {
	if dir := os.Getenv("NETEMU_TEST_FSIZE_DIR"); dir != "" {
		failedWriteUnderLimit(t, dir)
		return
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	dir := t.TempDir()
	tl := filepath.Join(dir, "t.csv")
	w, err := Instruments{Pcap: "/dev/full", Timeline: tl}.Attach(&Case{})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Finish()
	var we *WriteError
	if !errors.As(err, &we) || !slices.Equal(we.Instruments, []string{"pcap"}) || !strings.HasPrefix(err.Error(), "pcap: ") ||
		!errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "\n") {
		t.Errorf("--pcap /dev/full: %v; want a WriteError of pcap alone, one line, with ENOSPC", err)
	}
	if st, err := os.Stat("/dev/full"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/full after the failed write: %v, %v; want the device left alone", st, err)
	}
	if st, err := os.Stat(tl); err != nil || st.Size() == 0 {
		t.Errorf("the timeline, written well: %v; want it complete", err)
	}

	// A regular file that fails: a child process whose files may hold
	// 8 bytes, less than a pcap's header.
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailedWriteLeavesNoFile$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NETEMU_TEST_FSIZE_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the child with a file size limit: %v\n%s", err, out)
	}
}

// failedWriteUnderLimit runs in the child: a pcap and an mm-log over the
// file size limit fail, and neither is left in dir.
func failedWriteUnderLimit(t *testing.T, dir string) {
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 8, Max: 8}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	pcap, mm := filepath.Join(dir, "x.pcap"), filepath.Join(dir, "down.log")
	w, err := Instruments{Pcap: pcap, MMLogDown: mm, Command: "netemu run bulk"}.Attach(&Case{})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Finish()
	var we *WriteError
	if !errors.As(err, &we) || !slices.Equal(we.Instruments, []string{"pcap", "mm-log-down"}) {
		t.Errorf("over the file size limit: %v; want a WriteError of pcap and mm-log-down", err)
	}
	for _, p := range []string{pcap, mm} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left after its write failed: %v", p, err)
		}
	}
}
