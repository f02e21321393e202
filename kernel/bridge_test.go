//go:build linux

package kernel

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"golang.org/x/sys/unix"
)

// As root the TUN bridge delivers on one real-time thread, Facts says so,
// and the thread is gone once the network is closed: no thread of the
// process is left real-time.
func TestBridgeThreadRealtime(t *testing.T) {
	needRoot(t)
	if fifoThreads(t) != 0 {
		t.Fatal("a real-time thread before the network: the test cannot tell the bridge's")
	}
	n, err := New(Config{Link: link.Config{Delay: time.Millisecond}, Via: TUN})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			n.Close()
		}
	}()
	if n.Facts().BridgeThread != "SCHED_FIFO 10" {
		// Root in a user namespace, or a cgroup without real-time time:
		// the reason is in Facts, and nothing was raised.
		if !strings.HasPrefix(n.Facts().BridgeThread, "ordinary (SCHED_FIFO refused: ") {
			t.Fatalf("Facts().BridgeThread = %q; want SCHED_FIFO 10, or ordinary with the reason", n.Facts().BridgeThread)
		}
		if fifoThreads(t) != 0 {
			t.Fatal("the bridge's thread was refused real-time scheduling, yet a thread has it")
		}
		t.Skipf("this process may not make real-time threads: %s", n.Facts().BridgeThread)
	}
	if !strings.Contains(n.Facts().String(), ", bridge thread SCHED_FIFO 10") {
		t.Errorf("Facts().String() = %q; want the bridge's thread named", n.Facts().String())
	}
	if got := fifoThreads(t); got != 1 {
		t.Errorf("%d real-time threads with the network open; want 1, the bridge's", got)
	}
	n.Close()
	closed = true
	// The thread exits with the clock's goroutine; give the runtime a
	// moment to reap it.
	deadline := time.Now().Add(5 * time.Second)
	for fifoThreads(t) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a real-time thread is left 5 s after Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fifoThreads counts the threads of this process scheduled SCHED_FIFO.
func fifoThreads(t *testing.T) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended meanwhile
		}
		// Fields after the command's closing parenthesis; policy is the
		// 41st field of the line, the 39th after it (proc(5)).
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 39 {
			t.Fatalf("%s: %d fields after the command", p, len(f))
		}
		if policy, _ := strconv.Atoi(f[38]); policy == unix.SCHED_FIFO {
			n++
		}
	}
	return n
}
