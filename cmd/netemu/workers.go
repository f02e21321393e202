package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"

	"github.com/netemu/netemu/experiment"
)

// A sweep's worker process is this binary again, started with workerEnv
// set and the sweep's own arguments, so it plans the same cells; it
// serves units as experiment.ServeUnits says.

// workerEnv, set to 1, makes the process a sweep worker; studyEnv and
// studyHashEnv name the study file its sweep read, for the records.
const (
	workerEnv    = "NETEMU_SWEEP_WORKER"
	studyEnv     = "NETEMU_SWEEP_STUDY"
	studyHashEnv = "NETEMU_SWEEP_STUDY_SHA256"
)

// isWorker reports whether this process is a sweep worker.
func isWorker() bool { return os.Getenv(workerEnv) == "1" }

// workerMain is a worker's whole life; it returns the exit status. fault,
// if not nil, may fail a unit before it runs (tests of failures).
func workerMain(args []string, stdin io.Reader, stdout, stderr io.Writer, fault func(experiment.Unit) error) int {
	if len(args) == 0 || args[0] != sweepCmd.Name {
		fmt.Fprintf(stderr, "netemu: %s=1 is set by netemu sweep for its worker processes; unset it\n", workerEnv)
		return 2
	}
	s, err := planSweep(context.Background(), &sweepCmd.Command, args[1:]) // its traces are files the sweep read
	if err != nil {
		fmt.Fprintf(stderr, "netemu worker: %v\n", err)
		return 2
	}
	// The study file was read by the sweep, which passes its arguments.
	s.o.Study, s.o.StudyHash = os.Getenv(studyEnv), os.Getenv(studyHashEnv)
	s.fault = fault
	err = experiment.ServeUnits(stdin, stdout, len(s.Cases), s.runUnit)
	var ie *experiment.InputError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "netemu worker: %v\n", err)
		return 2
	default:
		return 1 // the sweep is gone
	}
}

// A sweepTrace is told of a sweep's worker processes, as an
// httptrace.ClientTrace is of a request's connections: carried by the
// context, so that a test can watch a sweep it runs through the whole
// command. A run has none.
type sweepTrace struct {
	workerStarted func(pid int) // each worker's process ID, once started
}

type sweepTraceKey struct{}

// withSweepTrace returns ctx carrying t.
func withSweepTrace(ctx context.Context, t *sweepTrace) context.Context {
	return context.WithValue(ctx, sweepTraceKey{}, t)
}

// workerStarted is the hook of ctx's sweepTrace, nil without one.
func workerStarted(ctx context.Context) func(pid int) {
	if t, ok := ctx.Value(sweepTraceKey{}).(*sweepTrace); ok {
		return t.workerStarted
	}
	return nil
}

// executor runs the sweep's units: in worker processes when more than one
// job and one run are asked for, else in this process.
func (s *sweep) executor(ctx context.Context, stderr io.Writer) experiment.Executor {
	if s.jobs <= 1 || len(s.Units()) <= 1 {
		return experiment.InProcess{Run: s.runUnit}
	}
	return experiment.Workers{Jobs: s.jobs, Stderr: &lockedWriter{w: stderr}, Started: workerStarted(ctx),
		Command: func(ctx context.Context) (*exec.Cmd, error) {
			self, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("--jobs %d: finding this program to start its workers: %w", s.jobs, err)
			}
			cmd := exec.CommandContext(ctx, self, append([]string{s.cmd.Name}, s.args...)...)
			cmd.Env = append(os.Environ(), workerEnv+"=1", studyEnv+"="+s.o.Study, studyHashEnv+"="+s.o.StudyHash)
			return cmd, nil
		}}
}

// availableCPUs is the number of CPUs this process may use (the cgroup's
// limit in a container), the default number of workers.
func availableCPUs() int { return runtime.GOMAXPROCS(0) }
