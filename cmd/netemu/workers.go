package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"time"
)

// Sweeps run their units in worker processes: the virtual clock's idle
// check is process-wide, so one process runs one run at a time. A worker
// is this binary again, started with workerEnv set and the sweep's own
// arguments, so it plans the same cells; it reads units from stdin, one
// JSON line each, and writes each one's outcome to stdout, one JSON line
// each, until stdin ends. The parent gives each worker one unit at a time
// and writes the outcomes in unit order, so the output is the same
// whatever the number of workers.

// workerEnv, set to 1, makes the process a sweep worker; studyEnv and
// studyHashEnv name the study file its sweep read, for the records.
const (
	workerEnv    = "NETEMU_SWEEP_WORKER"
	studyEnv     = "NETEMU_SWEEP_STUDY"
	studyHashEnv = "NETEMU_SWEEP_STUDY_SHA256"
)

// isWorker reports whether this process is a sweep worker.
func isWorker() bool { return os.Getenv(workerEnv) == "1" }

// workerMain is a worker's whole life; it returns the exit status.
func workerMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "sweep" {
		fmt.Fprintf(stderr, "netemu: %s=1 is set by netemu sweep for its worker processes; unset it\n", workerEnv)
		return 2
	}
	s, err := planSweep(args[1:])
	if err != nil {
		fmt.Fprintf(stderr, "netemu worker: %v\n", err)
		return 2
	}
	// The study file was read by the sweep, which passes its arguments.
	s.o.study, s.o.studyHash = os.Getenv(studyEnv), os.Getenv(studyHashEnv)
	// The units come on stdin; its end (the sweep closed it, or died)
	// ends the run in progress too: nobody would read its outcome.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := make(chan []byte)
	go func() {
		defer cancel()
		defer close(lines)
		in := bufio.NewScanner(stdin)
		for in.Scan() {
			select {
			case lines <- append([]byte(nil), in.Bytes()...):
			case <-ctx.Done():
				return
			}
		}
	}()
	out := bufio.NewWriter(stdout)
	enc := json.NewEncoder(out)
	for line := range lines {
		var u unit
		if err := json.Unmarshal(line, &u); err != nil || u.Cell < 0 || u.Cell >= len(s.cases) {
			fmt.Fprintf(stderr, "netemu worker: a unit %q that this sweep does not have\n", line)
			return 2
		}
		oc, err := s.runUnit(ctx, u)
		if ctx.Err() != nil {
			return 1 // the sweep is gone
		}
		if err != nil {
			oc = outcome{unit: u, Err: err.Error(), Fatal: true}
		}
		if err := enc.Encode(oc); err != nil {
			return 1
		}
		if err := out.Flush(); err != nil {
			return 1
		}
	}
	return 0
}

// workerStarted, if set, is told the process ID of every worker started
// (tests check that none outlives its sweep).
var workerStarted func(pid int)

// execute runs the units, on jobs worker processes when jobs > 1, and
// hands each outcome to emit in the units' order. A run that fails is an
// outcome like any other; an error stops the sweep: every worker is
// killed and waited for before execute returns.
func (s *sweep) execute(ctx context.Context, us []unit, jobs int, stderr io.Writer, bar *progress, emit func(outcome) error) error {
	if jobs <= 1 || len(us) <= 1 {
		for _, u := range us {
			bar.start(s.unitLabel(u))
			oc, err := s.runUnit(ctx, u)
			bar.finish()
			if err != nil {
				return err
			}
			if err := emit(oc); err != nil {
				return err
			}
		}
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--jobs %d: finding this program to start its workers: %w", jobs, err)
	}
	pool, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		k   int
		oc  outcome
		err error
	}
	todo := make(chan int, len(us))
	for k := range us {
		todo <- k
	}
	close(todo)
	n := min(jobs, len(us))
	results := make(chan result, len(us)+n)
	errw := &lockedWriter{w: stderr}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			var w *worker
			defer func() {
				if w != nil {
					w.stop()
				}
			}()
			for k := range todo {
				if w == nil {
					var err error
					if w, err = startWorker(pool, self, s.args, []string{studyEnv + "=" + s.o.study, studyHashEnv + "=" + s.o.studyHash}, errw); err != nil {
						results <- result{k: k, err: err}
						return
					}
				}
				oc, err := w.run(us[k])
				if pool.Err() != nil {
					return
				}
				if err != nil {
					// The process ended under this unit (a crash): the
					// unit failed; a new worker takes the next.
					w.stop()
					w = nil
					oc = outcome{unit: us[k], Err: err.Error()}
				}
				if oc.unit != us[k] {
					results <- result{k: k, err: fmt.Errorf("worker answered unit %+v with %+v", us[k], oc.unit)}
					return
				}
				results <- result{k: k, oc: oc}
			}
		})
	}
	defer wg.Wait() // after cancel: no worker outlives the sweep
	pending := map[int]outcome{}
	for k := range us {
		bar.start(s.unitLabel(us[k]))
		for {
			if oc, ok := pending[k]; ok {
				delete(pending, k)
				bar.finish()
				if oc.Fatal {
					return usagef("%s", oc.Err)
				}
				if err := emit(oc); err != nil {
					return err
				}
				break
			}
			select {
			case r := <-results:
				if r.err != nil {
					return r.err
				}
				pending[r.k] = r.oc
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
	}
	return nil
}

// A worker is one worker process and its pipes.
type worker struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	waited chan struct{} // closed once the process is waited for
	once   sync.Once
}

// wait waits for the process, once, and frees the thread it started from.
func (w *worker) wait() error {
	var err error
	w.once.Do(func() {
		err = w.cmd.Wait()
		close(w.waited)
	})
	return err
}

// startWorker starts a worker for the sweep of args; it is killed when
// ctx ends.
func startWorker(ctx context.Context, self string, args, env []string, stderr io.Writer) (*worker, error) {
	cmd := exec.CommandContext(ctx, self, append([]string{"sweep"}, args...)...)
	cmd.Env = append(append(os.Environ(), workerEnv+"=1"), env...)
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	setWorkerAttr(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// On Linux the worker is killed when the thread that started it
	// ends (Pdeathsig), so it starts from a thread of its own, locked
	// until the worker is waited for: the runtime ends threads that
	// other goroutines locked (kernel mode's), and the worker must not
	// die with one of those, only with the sweep.
	started := make(chan error)
	waited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-waited
		}
		runtime.UnlockOSThread()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting a worker process: %w", err)
	}
	if workerStarted != nil {
		workerStarted(cmd.Process.Pid)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20) // a record with an explanation can be long
	return &worker{cmd: cmd, in: in, out: sc, waited: waited}, nil
}

// run has the worker run u and returns its outcome; an error means the
// process is gone.
func (w *worker) run(u unit) (outcome, error) {
	b, _ := json.Marshal(u)
	if _, err := w.in.Write(append(b, '\n')); err != nil {
		return outcome{}, w.gone(err)
	}
	if !w.out.Scan() {
		return outcome{}, w.gone(w.out.Err())
	}
	var oc outcome
	if err := json.Unmarshal(w.out.Bytes(), &oc); err != nil {
		return outcome{}, fmt.Errorf("a worker process wrote %q: %w", w.out.Bytes(), err)
	}
	return oc, nil
}

// gone explains a worker process that stopped answering.
func (w *worker) gone(err error) error {
	w.in.Close()
	werr := w.wait()
	if werr == nil {
		werr = err
	}
	if werr == nil {
		werr = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("the worker process running it ended: %w", werr)
}

// stop ends the worker: its stdin closes, so it exits (or it was killed
// when the sweep stopped); it is waited for.
func (w *worker) stop() {
	w.in.Close()
	w.wait() // the outcome is known or no longer wanted
}

// lockedWriter serializes writes from several goroutines: the sweep
// workers' stderr, the proxy's connections' failure lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// availableCPUs is the number of CPUs this process may use (the cgroup's
// limit in a container), the default number of workers.
func availableCPUs() int { return runtime.GOMAXPROCS(0) }
