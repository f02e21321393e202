package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/netemu/netemu/clock"
)

// How netemu stops. The first SIGINT or SIGTERM ends the command's
// context: a run completes its files, a proxy drains, a shell passes the
// signal on. Whatever the command does then, netemu exits within
// StopLimit beyond the time the command asked for (allowStop: a proxy's
// --grace), and within StopLimit of a second signal, or of the end of
// the program a shell ran (holdStop): a network wedged
// inside the process (a lock taken in the wrong order, a close that
// never returns) must not hold the process, which then says what it
// found waiting.
const StopLimit = 10 * time.Second

// stopPolicy is what a command asked of the stop: more time, beyond
// StopLimit, or none counted while its signals are a program's.
type stopPolicy struct {
	mu       sync.Mutex
	extra    time.Duration
	held     bool
	released chan struct{} // buffered(1): a hold ended
}

type stopKey struct{}

// AllowStop asks for d more time to stop after an interrupt (a drain's
// grace). Without a policy in ctx (a test's context) it does nothing.
func AllowStop(ctx context.Context, d time.Duration) {
	if p, ok := ctx.Value(stopKey{}).(*stopPolicy); ok {
		p.mu.Lock()
		p.extra = max(p.extra, d)
		p.mu.Unlock()
	}
}

// HoldStop starts no limit until the returned release is called: the
// signals are a program's to handle meanwhile (netemu shell passes them
// on, and an interactive shell ignores Ctrl-C); the limit runs from the
// release, if a signal came, for the network's teardown.
func HoldStop(ctx context.Context) (release func()) {
	p, ok := ctx.Value(stopKey{}).(*stopPolicy)
	if !ok {
		return func() {}
	}
	p.mu.Lock()
	p.held = true
	p.mu.Unlock()
	return sync.OnceFunc(func() {
		p.mu.Lock()
		p.held = false
		p.mu.Unlock()
		p.released <- struct{}{}
	})
}

func (p *stopPolicy) allowance() (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.extra, p.held
}

// RunStoppable runs cmd (the command, as run runs it), its context
// ended by the first signal on sigs, and returns its exit status; or,
// if it has not returned within the limits above, the signal's status
// after a line on stderr that says what was still waiting. cmd's
// goroutine is then left to the process's exit.
func RunStoppable(cmd func(context.Context) int, sigs <-chan os.Signal, stderr io.Writer, limit time.Duration) int {
	pol := &stopPolicy{released: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), stopKey{}, pol))
	defer cancel(nil)
	done := make(chan int, 1)
	go func() { done <- cmd(ctx) }()
	var (
		first    *SignalError
		since    time.Time // of the first signal
		deadline time.Time
		timer    <-chan time.Time
	)
	for {
		select {
		case code := <-done:
			return code
		case s := <-sigs:
			extra, held := pol.allowance()
			d := limit
			if first == nil {
				first, since = &SignalError{Sig: s}, time.Now()
				cancel(first)
				d += extra
			}
			if due := time.Now().Add(d); !held && (timer == nil || due.Before(deadline)) {
				deadline, timer = due, time.After(d)
			}
		case <-pol.released:
			if first != nil && timer == nil {
				deadline, timer = time.Now().Add(limit), time.After(limit)
			}
		case <-timer:
			fmt.Fprintf(stderr, "netemu: still running %v after %v; exiting without finishing: %s\n",
				time.Since(since).Round(100*time.Millisecond), first, wedged())
			return first.ExitStatus()
		}
	}
}

// wedged describes what the process's goroutines wait for: those that
// wait on a lock, by the innermost function of netemu's that waits.
func wedged() string {
	buf := clock.AllStacks()
	where := map[string]int{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if !strings.Contains(head, "[sync.Mutex.Lock") && !strings.Contains(head, "[sync.RWMutex") && !strings.Contains(head, "[semacquire") {
			continue
		}
		for line := range strings.SplitSeq(g, "\n") {
			f, ok := strings.CutPrefix(line, "github.com/netemu/netemu/")
			if !ok && strings.HasPrefix(line, "main.") { // the front end's own
				f, ok = line, true
			}
			if ok {
				f, _, _ = strings.Cut(f, "(0x")
				f = strings.TrimSuffix(strings.TrimSuffix(f, "(...)"), "()")
				where[f]++
				break
			}
		}
	}
	if len(where) == 0 {
		return "no goroutine of netemu's waits on a lock"
	}
	var parts []string
	for f, k := range where {
		parts = append(parts, fmt.Sprintf("%s ×%d", f, k))
	}
	slices.Sort(parts)
	total := 0
	for _, k := range where {
		total += k
	}
	return fmt.Sprintf("%d goroutines wait on locks, in %s", total, strings.Join(parts, ", "))
}

// SignalError ends a run that a signal interrupted.
type SignalError struct{ Sig os.Signal }

func (e *SignalError) Error() string { return "interrupted by " + e.Sig.String() }

// ExitStatus is the shell's status for the signal: 128 + its number.
func (e *SignalError) ExitStatus() int {
	if s, ok := e.Sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}
