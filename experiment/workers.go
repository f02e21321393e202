package experiment

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"time"
)

// Worker processes run a sweep's units side by side: the virtual clock's
// idle check is process-wide, so one process runs one run at a time. A
// worker reads units from stdin, one JSON line each, and writes each
// one's outcome to stdout, one JSON line each, until stdin ends
// (ServeUnits). Workers gives each worker one unit at a time and hands
// the outcomes on in unit order, so the output is the same whatever the
// number of workers.

// Workers runs units in Jobs worker processes, each started by Command.
type Workers struct {
	Jobs int
	// Command returns the command of a worker process that serves this
	// sweep's units (ServeUnits); Workers sets its standard streams,
	// process attributes and the context that kills it.
	Command func(ctx context.Context) (*exec.Cmd, error)
	// Stderr receives the workers' stderr; the workers write to it at
	// the same time, so it must be safe for that.
	Stderr  io.Writer
	Started func(pid int) // if set, told of every worker started
}

// Execute implements Executor. An error stops the sweep: every worker is
// killed and waited for before Execute returns.
func (x Workers) Execute(ctx context.Context, us []Unit, p Progress, emit func(UnitOutcome) error) error {
	pool, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		k   int
		oc  UnitOutcome
		err error
	}
	todo := make(chan int, len(us))
	for k := range us {
		todo <- k
	}
	close(todo)
	n := min(max(x.Jobs, 1), len(us))
	results := make(chan result, len(us)+n)
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
					if w, err = x.start(pool, x.Stderr); err != nil {
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
					oc = UnitOutcome{Unit: us[k], Err: err.Error()}
				}
				if oc.Unit != us[k] {
					results <- result{k: k, err: fmt.Errorf("worker answered unit %+v with %+v", us[k], oc.Unit)}
					return
				}
				results <- result{k: k, oc: oc}
			}
		})
	}
	defer wg.Wait() // after cancel: no worker outlives the sweep
	pending := map[int]UnitOutcome{}
	for k := range us {
		p.Start(us[k])
		for {
			if oc, ok := pending[k]; ok {
				delete(pending, k)
				p.Finish()
				if oc.Fatal {
					return inputErrorf("%s", oc.Err)
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

// start starts a worker; it is killed when ctx ends.
func (x Workers) start(ctx context.Context, stderr io.Writer) (*worker, error) {
	cmd, err := x.Command(ctx)
	if err != nil {
		return nil, err
	}
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
	if x.Started != nil {
		x.Started(cmd.Process.Pid)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20) // a record with an explanation can be long
	return &worker{cmd: cmd, in: in, out: sc, waited: waited}, nil
}

// run has the worker run u and returns its outcome; an error means the
// process is gone.
func (w *worker) run(u Unit) (UnitOutcome, error) {
	b, _ := json.Marshal(u)
	if _, err := w.in.Write(append(b, '\n')); err != nil {
		return UnitOutcome{}, w.gone(err)
	}
	if !w.out.Scan() {
		return UnitOutcome{}, w.gone(w.out.Err())
	}
	var oc UnitOutcome
	if err := json.Unmarshal(w.out.Bytes(), &oc); err != nil {
		return UnitOutcome{}, fmt.Errorf("a worker process wrote %q: %w", w.out.Bytes(), err)
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

// ErrSweepGone ends ServeUnits when its sweep stopped reading: stdin
// ended in the middle of a run, or stdout could not be written.
var ErrSweepGone = errors.New("the sweep is gone")

// ServeUnits is a worker process's life: it runs the units that arrive on
// stdin with run, one at a time, of a sweep of cells cells, and writes
// each outcome to stdout, until stdin ends (nil). The end of stdin (the
// sweep closed it, or died) also ends the run in progress: nobody would
// read its outcome (ErrSweepGone). A unit the sweep lacks is an
// *InputError; an error run returns goes back as a fatal outcome.
func ServeUnits(stdin io.Reader, stdout io.Writer, cells int, run RunFunc) error {
	if f, ok := stdin.(*os.File); ok {
		if p := pollable(f); p != nil {
			defer p.Close() // after cancel: the reader's Scan ends
			stdin = p
		}
	}
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
		var u Unit
		if err := json.Unmarshal(line, &u); err != nil || u.Cell < 0 || u.Cell >= cells {
			return inputErrorf("a unit %q that this sweep does not have", line)
		}
		oc, err := run(ctx, u)
		if ctx.Err() != nil {
			return ErrSweepGone
		}
		if err != nil {
			oc = UnitOutcome{Unit: u, Err: err.Error(), Fatal: true}
		}
		if err := enc.Encode(oc); err != nil {
			return ErrSweepGone
		}
		if err := out.Flush(); err != nil {
			return ErrSweepGone
		}
	}
	return nil
}
