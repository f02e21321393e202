//go:build unix

package kernel

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A program's end is its status as a shell gives it: its own exit
// status, or 128 plus the signal that ended it; one that could not start
// is a StartError that keeps exec's error.
func TestExitOf(t *testing.T) {
	for _, c := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -KILL $$", 128 + int(syscall.SIGKILL)},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
	} {
		exit, err := exitOf(exec.Command("sh", "-c", c.script).Run(), time.Second)
		if err != nil || exit.Status != c.want || exit.Took != time.Second {
			t.Errorf("sh -c %q: %+v, %v; want status %d after 1s", c.script, exit, err, c.want)
		}
	}
	cmd := exec.Command("no-such-program-here")
	_, err := exitOf(cmd.Run(), 0)
	var se *StartError
	if !errors.As(err, &se) || !errors.Is(err, exec.ErrNotFound) || err.Error() != cmd.Err.Error() {
		t.Errorf("a program not found: %v; want a StartError with exec's error, as it was", err)
	}
	if _, err := exitOf(errors.New("other"), 0); errors.As(err, &se) || err.Error() != "other" {
		t.Errorf("another error: %v; want it as it was", err)
	}
}

// A SIGTERM relayed to a program that ignores it is followed by SIGKILL
// after the kill delay; a signal sent before the program started waits
// for it.
func TestRelaySignalsKillsAfterTerm(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// An ignored signal stays ignored across exec.
	cmd := exec.Command("sh", "-c", `trap "" TERM; echo ready; exec sleep 30`)
	cmd.Stdout = w
	sigs := make(chan os.Signal, 1)
	started := make(chan *os.Process, 1)
	done := make(chan struct{})
	defer close(done)
	go relaySignals(sigs, started, done, 200*time.Millisecond)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if line, err := bufio.NewReader(r).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the program said %q, %v; want ready", line, err)
	}
	sigs <- syscall.SIGTERM
	begin := time.Now()
	started <- cmd.Process
	exit, err := exitOf(cmd.Wait(), 0)
	if took := time.Since(begin); err != nil || exit.Status != 128+int(syscall.SIGKILL) || took < 200*time.Millisecond || took > 10*time.Second {
		t.Errorf("%+v, %v after %v; want status %d (SIGKILL) after 200ms", exit, err, took, 128+int(syscall.SIGKILL))
	}
}

// Once done, nothing more is relayed, and a process that never started
// leaves the relay nothing to wait for.
func TestRelaySignalsStopsWhenDone(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		relaySignals(sigs, make(chan *os.Process), done, time.Millisecond)
		close(ended)
	}()
	close(done)
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay goes on after done, without a process")
	}
}
