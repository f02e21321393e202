package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// terminal runs shell command line in a terminal of its own (a detached
// tmux session on a private socket, 160 × 100 characters) and returns the
// screen once the command has ended, each line without its trailing
// spaces.
func terminal(t *testing.T, line string) []string {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed; it provides the terminal for this test")
	}
	// A server of its own for each terminal, on a short path (a socket's
	// path is limited to about 100 bytes).
	sockDir, err := os.MkdirTemp("", "tmux")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "s")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tm := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := tm("new-session", "-d", "-x", "160", "-y", "100", "sh", "-c", line+`; echo "EXIT=$?"; sleep 60`); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	defer tm("kill-server") // the server on this test's socket only
	for {
		screen, err := tm("capture-pane", "-p", "-J")
		if err != nil {
			t.Fatalf("tmux capture-pane: %v\n%s", err, screen)
		}
		if strings.Contains(screen, "EXIT=") {
			var lines []string
			for _, l := range strings.Split(screen, "\n") {
				lines = append(lines, strings.TrimRight(l, " "))
			}
			for len(lines) > 0 && lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			return lines
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the command did not end in a minute; screen:\n%s", screen)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// reproduce prints its tables between cases. With stdout and stderr on
// one terminal, the bar gives way to them and is gone at the end: the
// screen holds exactly reproduce's output. With stdout redirected, the bar
// ends complete on a line of its own, and the file holds no escape code.
// With stderr redirected, nothing is written there.
func TestProgressOnATerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := netemuBin(t)
	plain, err := exec.Command(bin, "reproduce").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimRight(string(plain), "\n"), "\n")

	t.Run("both on the terminal", func(t *testing.T) {
		screen := terminal(t, bin+" reproduce")
		if screen[len(screen)-1] != "EXIT=0" {
			t.Fatalf("screen:\n%s", strings.Join(screen, "\n"))
		}
		screen = screen[:len(screen)-1]
		if strings.Join(screen, "\n") != strings.Join(want, "\n") {
			t.Errorf("the terminal shows:\n%s\nwant reproduce's output and nothing else:\n%s",
				strings.Join(screen, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("stderr to a file", func(t *testing.T) {
		errFile := filepath.Join(dir, "stderr")
		screen := terminal(t, bin+" reproduce 2>"+errFile)
		if got := strings.Join(screen, "\n"); got != strings.Join(want, "\n")+"\nEXIT=0" {
			t.Errorf("screen:\n%s", got)
		}
		b, err := os.ReadFile(errFile)
		if err != nil || len(b) != 0 {
			t.Errorf("stderr: %q, %v; want nothing when it is not a terminal", b, err)
		}
	})

	t.Run("stdout to a file", func(t *testing.T) {
		// A sweep on the real clock: long enough (1.5 s) for the bar to
		// show on any machine.
		outFile := filepath.Join(dir, "stdout")
		screen := terminal(t, bin+" sweep keepalive --rtt 50ms,100ms --rate 0 --requests 3 --clock real >"+outFile)
		b, err := os.ReadFile(outFile)
		if err != nil || bytes.Count(b, []byte("\n")) != 5 || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("workload")) {
			t.Errorf("stdout with the bar on the terminal (%v):\n%s", err, b)
		}
		if bytes.ContainsRune(b, '\033') {
			t.Error("stdout holds an escape code")
		}
		complete := regexp.MustCompile(`^ *100% \[=+\] \((\d+)/(\d+)\) \[\d+s\] done$`)
		if m := complete.FindStringSubmatch(screen[0]); len(screen) != 2 || m == nil || m[1] != m[2] || screen[1] != "EXIT=0" {
			t.Errorf("the terminal shows:\n%s\nwant the complete bar on a line of its own, then the exit status", strings.Join(screen, "\n"))
		}
	})
}
