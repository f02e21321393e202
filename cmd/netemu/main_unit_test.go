package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
)

// TestMain lets the test binary be a sweep's worker process, as netemu
// is its own. In a worker, testFailEnv=N fails the runs of cell N, and
// testCrashEnv=N makes the process exit in the middle of cell N's first
// runs. With testAsNetemuEnv set it is netemu.
func TestMain(m *testing.M) {
	if os.Getenv(testAsNetemuEnv) != "" || kernel.IsShellInit() {
		main() // the test binary as netemu itself, for tests that signal it
	}
	if cli.IsWorker() {
		var fail, crash int
		_, ferr := fmt.Sscan(os.Getenv(testFailEnv), &fail)
		_, cerr := fmt.Sscan(os.Getenv(testCrashEnv), &crash)
		fault := func(u experiment.Unit) error {
			switch {
			case ferr == nil && u.Cell == fail:
				return errors.New("injected failure")
			case cerr == nil && u.Cell == crash:
				os.Exit(3)
			}
			return nil
		}
		os.Exit(cli.WorkerMain(&sweepCmd.Command, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, fault))
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the command built once by netemuBin for the tests that run it
// as a process of its own.
var built struct {
	once      sync.Once
	dir, path string
	out       []byte
	err       error
}

// netemuBin returns the path of the command, built from this source once
// for the whole test binary with go build's defaults: without the race
// detector, whatever flags the tests themselves were built with. Tests
// that signal the command, draw it on a terminal or pin the output of
// long virtual runs run it. The race detector made those runs 20 to 50
// times slower (reproduce's 18 cells took 20 s of CPU under it, 0.8 s
// without) and adds nothing to a comparison of output; the code they run
// stays under it elsewhere: reproduce's first cell in
// TestLostOutputIsAnError, the sweep, run and explain tests here, the
// workloads' and emu's own tests.
func netemuBin(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "netemu-test"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "netemu")
		built.out, built.err = exec.Command("go", "build", "-o", built.path, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.path
}

// runBin runs the command built by netemuBin with args, as runCmd runs it
// in this process.
func runBin(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(netemuBin(t), args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("netemu %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), o.String(), e.String()
}

const (
	testFailEnv     = "NETEMU_TEST_FAIL_CELL"
	testCrashEnv    = "NETEMU_TEST_CRASH_CELL"
	testAsNetemuEnv = "NETEMU_TEST_AS_NETEMU"
)
