package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// wedge is a command that never stops: it waits on a lock its own
// goroutine holds, as a network whose lock order went wrong does.
type wedge struct {
	mu      sync.Mutex
	locked  int // times lockAgain got the lock
	release chan struct{}
}

func (w *wedge) run(ctx context.Context) int {
	w.mu.Lock()
	go func() {
		<-w.release
		w.mu.Unlock()
	}()
	<-ctx.Done()
	w.lockAgain()
	return 0
}

func (w *wedge) lockAgain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.locked++
}

// A signal ends a command that does not stop within the limit, with the
// signal's status and a line that names the lock it waits on; a second
// signal ends it within the limit of its own, however long the command
// asked for (allowStop); a command that stops returns its own status.
func TestSignalEndsAWedgedCommand(t *testing.T) {
	const limit = 300 * time.Millisecond
	for _, tc := range []struct {
		name    string
		sigs    []os.Signal
		allow   time.Duration
		atLeast time.Duration
	}{
		{"SIGINT", []os.Signal{os.Interrupt}, 0, limit},
		{"SIGTERM", []os.Signal{syscall.SIGTERM}, 0, limit},
		{"after the command's allowance", []os.Signal{os.Interrupt}, limit, 2 * limit},
		{"a second signal", []os.Signal{os.Interrupt, os.Interrupt}, time.Hour, limit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &wedge{release: make(chan struct{})}
			defer close(w.release)
			sigs := make(chan os.Signal, 2)
			var stderr bytes.Buffer
			start := time.Now()
			code := make(chan int, 1)
			ready := make(chan struct{})
			go func() {
				code <- RunStoppable(func(ctx context.Context) int {
					AllowStop(ctx, tc.allow)
					close(ready)
					return w.run(ctx)
				}, sigs, &stderr, limit)
			}()
			<-ready
			for _, s := range tc.sigs {
				sigs <- s
			}
			var got int
			select {
			case got = <-code:
			case <-time.After(limit + tc.atLeast + 30*time.Second):
				t.Fatalf("still running %v after %v", time.Since(start), tc.sigs)
			}
			want := 130
			if tc.sigs[0] == syscall.SIGTERM {
				want = 143
			}
			if got != want {
				t.Errorf("status %d; want %d", got, want)
			}
			if el := time.Since(start); el < tc.atLeast {
				t.Errorf("returned after %v; want it to wait %v for the command", el, tc.atLeast)
			}
			line := stderr.String()
			if !strings.HasPrefix(line, "netemu: still running") || !strings.Contains(line, "exiting without finishing: 1 goroutines wait on locks, in cli.(*wedge).lockAgain ×1") || strings.Count(line, "\n") != 1 {
				t.Errorf("stderr %q; want one line that names the wedged lock", line)
			}
		})
	}
	// A shell's program handles its signals: the limit starts when it
	// ends, for the teardown.
	t.Run("held", func(t *testing.T) {
		w := &wedge{release: make(chan struct{})}
		defer close(w.release)
		sigs := make(chan os.Signal, 1)
		var stderr bytes.Buffer
		programEnds := make(chan struct{})
		code := make(chan int, 1)
		go func() {
			code <- RunStoppable(func(ctx context.Context) int {
				release := HoldStop(ctx)
				sigs <- os.Interrupt
				<-programEnds
				release()
				return w.run(ctx)
			}, sigs, &stderr, limit)
		}()
		select {
		case got := <-code:
			t.Fatalf("returned %d while the program ran; want it to wait for the program", got)
		case <-time.After(3 * limit):
		}
		close(programEnds)
		select {
		case got := <-code:
			if got != 130 || !strings.Contains(stderr.String(), "(*wedge).lockAgain") {
				t.Errorf("status %d, stderr %q; want 130 and the wedged lock named", got, stderr.String())
			}
		case <-time.After(limit + 30*time.Second):
			t.Fatal("a wedged teardown after the program ended held the process")
		}
	})
	t.Run("stops", func(t *testing.T) {
		sigs := make(chan os.Signal, 1)
		var stderr bytes.Buffer
		sigs <- os.Interrupt
		got := RunStoppable(func(ctx context.Context) int {
			<-ctx.Done()
			return 7
		}, sigs, &stderr, time.Hour)
		if got != 7 || stderr.Len() != 0 {
			t.Errorf("a command that stops: status %d, stderr %q; want its own 7 and nothing", got, stderr.String())
		}
	})
}
