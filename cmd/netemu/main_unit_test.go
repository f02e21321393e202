package main

import (
	"errors"
	"fmt"
	"github.com/netemu/netemu/kernel"
	"os"
	"testing"
)

// TestMain lets the test binary be a sweep's worker process, as netemu
// is its own. In a worker, testFailEnv=N fails the runs of cell N, and
// testCrashEnv=N makes the process exit in the middle of cell N's first
// runs. With testAsNetemuEnv set it is netemu.
func TestMain(m *testing.M) {
	if os.Getenv(testAsNetemuEnv) != "" || kernel.IsShellInit() {
		main() // the test binary as netemu itself, for tests that signal it
	}
	if isWorker() {
		var fail, crash int
		_, ferr := fmt.Sscan(os.Getenv(testFailEnv), &fail)
		_, cerr := fmt.Sscan(os.Getenv(testCrashEnv), &crash)
		testFault = func(u unit) error {
			switch {
			case ferr == nil && u.Cell == fail:
				return errors.New("injected failure")
			case cerr == nil && u.Cell == crash:
				os.Exit(3)
			}
			return nil
		}
		os.Exit(workerMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

const (
	testFailEnv     = "NETEMU_TEST_FAIL_CELL"
	testCrashEnv    = "NETEMU_TEST_CRASH_CELL"
	testAsNetemuEnv = "NETEMU_TEST_AS_NETEMU"
)
