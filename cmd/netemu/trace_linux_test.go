package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/cli"
)

// A signal ends a command that waits on a trace: a FIFO with no writer
// (open blocks) and a pipe whose writer stays silent (read blocks), as
// --trace-down <(sleep 30; echo 1) and trace show /dev/stdin give. The
// command returns soon after the signal, with 128 + its number.
func TestSignalEndsTraceRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.trace")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A writer that comes and goes lets the blocked reads end.
		if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
			f.Close()
		}
	})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	pipe := "/dev/fd/" + strconv.Itoa(int(r.Fd()))

	for _, args := range [][]string{
		{"run", "bulk", "--size", "64KiB", "--trace-down", fifo},
		{"trace", "show", fifo},
		{"run", "bulk", "--size", "64KiB", "--trace-down", pipe},
		{"trace", "show", pipe},
	} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			ctx, cancel := context.WithCancelCause(context.Background())
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- run(ctx, args, &stdout, &stderr) }()
			select {
			case code := <-done:
				t.Fatalf("netemu %s returned %d before any signal, though its trace has no data: %s", strings.Join(args, " "), code, stderr.String())
			case <-time.After(100 * time.Millisecond):
			}
			cancel(&cli.SignalError{Sig: sig})
			select {
			case code := <-done:
				if code != 128+int(sig) || !strings.Contains(stderr.String(), "interrupted") {
					t.Errorf("netemu %s, %v: exit %d, stderr %q; want exit %d and the interruption", strings.Join(args, " "), sig, code, stderr.String(), 128+int(sig))
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("netemu %s: %v did not end it within 10 s while it read its trace", strings.Join(args, " "), sig)
			}
		}
	}
}
