package emutest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTB stands in for a test's *testing.T, to watch emutest fail a test:
// it records what Errorf and Fatalf say, and runs the cleanups when the
// fake test ends. The embedded real TB only satisfies the interface;
// every method emutest calls is overridden.
type fakeTB struct {
	testing.TB
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	msgs     []string
	failed   bool
	cleanups []func()
}

func newFakeTB(t *testing.T) *fakeTB {
	ctx, cancel := context.WithCancel(context.Background())
	return &fakeTB{TB: t, ctx: ctx, cancel: cancel}
}

func (f *fakeTB) Helper()                   {}
func (f *fakeTB) Context() context.Context  { return f.ctx }
func (f *fakeTB) Logf(string, ...any)       {}
func (f *fakeTB) Errorf(s string, a ...any) { f.record(fmt.Sprintf(s, a...)) }
func (f *fakeTB) Error(a ...any)            { f.record(fmt.Sprint(a...)) }
func (f *fakeTB) Fatalf(s string, a ...any) { f.record(fmt.Sprintf(s, a...)); runtime.Goexit() }
func (f *fakeTB) Fatal(a ...any)            { f.record(fmt.Sprint(a...)); runtime.Goexit() }
func (f *fakeTB) FailNow()                  { f.record(""); runtime.Goexit() }

func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}

func (f *fakeTB) record(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	if msg != "" {
		f.msgs = append(f.msgs, msg)
	}
}

// messages returns everything the fake test reported, one line per call.
func (f *fakeTB) messages() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.msgs, "\n")
}

// run runs body as a test: on a goroutine of its own, then the cleanups
// in reverse order, also when body calls Fatal.
func (f *fakeTB) run(body func(tb testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			f.cancel()
			for i := len(f.cleanups) - 1; i >= 0; i-- {
				f.cleanups[i]()
			}
		}()
		body(f)
	}()
	<-done
}
