//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/netemu/netemu/cli"
)

// SIGINT (here, its cancellation of the context) stops the sweep: every
// worker process it started is killed and reaped before it returns, and
// a sweep without --out says how to keep its runs.
func TestJobsInterruptLeavesNoProcess(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var mu sync.Mutex
	var pids []int
	ctx = cli.WithSweepTrace(ctx, &cli.SweepTrace{WorkerStarted: func(pid int) {
		mu.Lock()
		defer mu.Unlock()
		pids = append(pids, pid)
		if len(pids) == 2 {
			cancel(&cli.SignalError{Sig: os.Interrupt})
		}
	}})
	var o, e strings.Builder
	code := run(ctx, sweepArgs("--seeds", "1-50", "--jobs", "2"), &o, &e)
	if code != 130 || !strings.Contains(e.String(), "interrupted") {
		t.Errorf("exit %d, stderr %q; want 130 and the interruption", code, e.String())
	}
	// Without --out the finished runs are gone: the message says how to
	// keep them next time.
	if !strings.Contains(e.String(), "not kept without --out; run it with --out FILE") || !strings.Contains(e.String(), "--continue") {
		t.Errorf("stderr %q; want how to make the sweep resumable (--out, --continue)", e.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pids) < 2 {
		t.Fatalf("%d workers started; want 2", len(pids))
	}
	for _, pid := range pids {
		// Reaped: the process ID no longer exists.
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("worker %d still exists after the sweep returned (kill 0: %v)", pid, err)
		}
	}
}
