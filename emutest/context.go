package emutest

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/netemu/netemu/clock"
)

// WithDeadline is context.WithDeadline on the run's clock c: the returned
// context is done with context.DeadlineExceeded when c reaches deadline,
// with parent's error when parent is done, or with context.Canceled when
// cancel is called, whichever comes first.
//
// The standard library's context.WithDeadline and context.WithTimeout
// measure wall time. On a virtual clock wall time and run time do not
// match, so their timers fire at an instant of the run nobody can
// predict; these fire at exactly the instant asked for.
//
// Deadline reports deadline (or parent's deadline if it is earlier), an
// instant of c. A deadline math.MaxInt64 or more after c.Now() (the year
// 2500) is past the end of the clock's time: the context never ends by
// itself. Call cancel when done with the context, as with the standard
// library's. WithDeadline panics if parent or c is nil.
func WithDeadline(parent context.Context, c clock.Clock, deadline time.Time) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("emutest.WithDeadline: nil parent context; pass the run's context")
	}
	if c == nil {
		panic("emutest.WithDeadline: nil clock; pass the run's clock (emu.Net.Clock)")
	}
	if cur, ok := parent.Deadline(); ok && cur.Before(deadline) {
		deadline = cur // parent ends first, as in context.WithDeadline
	}
	ctx := &deadlineCtx{
		values:   context.WithoutCancel(parent),
		deadline: deadline,
		done:     make(chan struct{}),
		afters:   make(map[int]func()),
	}
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	cancel := func() { ctx.cancel(context.Canceled) }
	if err := parent.Err(); err != nil {
		ctx.cancelLocked(err)
		return ctx, cancel
	}
	// Sub saturates: a deadline math.MaxInt64 or more away is past the end
	// of the clock's time and needs no timer.
	wait := deadline.Sub(c.Now())
	if wait <= 0 {
		ctx.cancelLocked(context.DeadlineExceeded)
		return ctx, cancel
	}
	ctx.stopParent = context.AfterFunc(parent, func() { ctx.cancel(parent.Err()) })
	if wait < math.MaxInt64 {
		ctx.timer = c.AfterFunc(wait, func() { ctx.cancel(context.DeadlineExceeded) })
	}
	return ctx, cancel
}

// WithTimeout is WithDeadline(parent, c, c.Now().Add(d)); time.Time.Add
// does not wrap, so WithTimeout(parent, c, math.MaxInt64) never ends by
// itself.
func WithTimeout(parent context.Context, c clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	if c == nil {
		panic("emutest.WithTimeout: nil clock; pass the run's clock (emu.Net.Clock)")
	}
	return WithDeadline(parent, c, c.Now().Add(d))
}

// deadlineCtx is a context with a deadline on a clock.Clock.
//
// It carries parent's values through context.WithoutCancel, so that
// context.Cause(ctx) is ctx.Err() rather than the parent's cause, and it
// implements AfterFunc, so that contexts derived from it are canceled
// without a goroutine each.
type deadlineCtx struct {
	values   context.Context
	deadline time.Time
	done     chan struct{}

	mu         sync.Mutex
	err        error
	timer      clock.Timer
	stopParent func() bool
	afters     map[int]func()
	next       int
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }
func (c *deadlineCtx) Value(key any) any           { return c.values.Value(key) }

func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *deadlineCtx) String() string {
	return "emutest.WithDeadline(" + c.deadline.Format(time.RFC3339Nano) + ")"
}

// AfterFunc calls f once c is done, on the goroutine that ends c (a clock
// event, or the one canceling c or its parent), or at once if c is done
// already. f must not block. stop unregisters f and reports whether it
// did so before f was called. The context package uses this to cancel
// derived contexts.
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		f()
		return func() bool { return false }
	}
	id := c.next
	c.next++
	c.afters[id] = f
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.afters[id]
		delete(c.afters, id)
		return ok
	}
}

func (c *deadlineCtx) cancel(err error) {
	c.mu.Lock()
	fs := c.cancelLocked(err)
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// cancelLocked ends c with err unless it has ended, and returns the
// functions to call once c.mu is released. c.mu is held.
func (c *deadlineCtx) cancelLocked(err error) []func() {
	if c.err != nil {
		return nil
	}
	c.err = err
	close(c.done)
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.stopParent != nil {
		c.stopParent()
	}
	// Registration order, so that derived contexts end in a fixed order.
	fs := make([]func(), 0, len(c.afters))
	for id := 0; id < c.next; id++ {
		if f, ok := c.afters[id]; ok {
			fs = append(fs, f)
		}
	}
	c.afters = nil
	return fs
}
