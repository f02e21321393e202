package emutest

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
)

// A timeout fires at exactly its instant of the run, with the standard
// errors: Err and Cause are context.DeadlineExceeded, for the context and
// for those derived from it.
func TestWithTimeoutFiresAtVirtualInstant(t *testing.T) {
	n := New(t)
	n.Run(func(ctx context.Context) {
		start := n.Now()
		tctx, cancel := n.WithTimeout(ctx, 1234*time.Millisecond)
		defer cancel()
		child, cancelChild := context.WithCancel(tctx)
		defer cancelChild()
		if d, ok := tctx.Deadline(); !ok || d != start.Add(1234*time.Millisecond) {
			t.Errorf("Deadline() = %v, %v; want %v", d, ok, start.Add(1234*time.Millisecond))
		}
		if d, ok := child.Deadline(); !ok || d != start.Add(1234*time.Millisecond) {
			t.Errorf("derived Deadline() = %v, %v", d, ok)
		}
		if tctx.Err() != nil {
			t.Errorf("Err before the deadline: %v", tctx.Err())
		}
		<-child.Done()
		if d := n.Now().Sub(start); d != 1234*time.Millisecond {
			t.Errorf("timeout fired after %v; want exactly 1.234s", d)
		}
		for name, c := range map[string]context.Context{"context": tctx, "derived context": child} {
			if c.Err() != context.DeadlineExceeded || context.Cause(c) != context.DeadlineExceeded {
				t.Errorf("%s: Err %v, Cause %v; want context.DeadlineExceeded for both", name, c.Err(), context.Cause(c))
			}
		}
	})
}

// Cancel, a parent's end, an earlier parent deadline and a deadline
// already past behave as with context.WithDeadline.
func TestWithDeadlineLikeTheStandardLibrary(t *testing.T) {
	n := New(t)
	n.Run(func(ctx context.Context) {
		start := n.Now()

		c, cancel := n.WithTimeout(ctx, time.Hour)
		cancel()
		cancel() // idempotent
		if c.Err() != context.Canceled || context.Cause(c) != context.Canceled {
			t.Errorf("after cancel: Err %v, Cause %v; want context.Canceled", c.Err(), context.Cause(c))
		}

		parent, cancelParent := context.WithCancelCause(ctx)
		c, cancel = n.WithTimeout(parent, time.Hour)
		defer cancel()
		cancelParent(errors.New("why"))
		<-c.Done()
		if c.Err() != context.Canceled {
			t.Errorf("after the parent's cancel: Err %v; want context.Canceled", c.Err())
		}

		c, cancel = n.WithDeadline(ctx, start.Add(-time.Second))
		defer cancel()
		select {
		case <-c.Done():
		default:
			t.Errorf("a deadline in the past: not done at once")
		}
		if c.Err() != context.DeadlineExceeded {
			t.Errorf("a deadline in the past: Err %v", c.Err())
		}

		c, cancel = n.WithTimeout(parent, time.Second) // parent already ended
		defer cancel()
		if c.Err() != context.Canceled {
			t.Errorf("from an ended parent: Err %v; want context.Canceled at once", c.Err())
		}

		outer, cancelOuter := n.WithTimeout(ctx, 100*time.Millisecond)
		defer cancelOuter()
		inner, cancelInner := n.WithTimeout(outer, time.Second)
		defer cancelInner()
		if d, _ := inner.Deadline(); d != start.Add(100*time.Millisecond) {
			t.Errorf("inner deadline %v; want the parent's earlier one, %v", d, start.Add(100*time.Millisecond))
		}
		<-inner.Done()
		if d := n.Now().Sub(start); d != 100*time.Millisecond || inner.Err() != context.DeadlineExceeded {
			t.Errorf("inner ended at %v with %v; want 100ms, deadline exceeded", d, inner.Err())
		}

		// Values pass through.
		type key struct{}
		vctx := context.WithValue(ctx, key{}, "v")
		c, cancel = n.WithTimeout(vctx, time.Second)
		defer cancel()
		if c.Value(key{}) != "v" {
			t.Errorf("value lost")
		}
		if !strings.HasPrefix(c.(interface{ String() string }).String(), "emutest.WithDeadline(2000-01-01T") {
			t.Errorf("String() = %q", c)
		}
	})
}

// context.AfterFunc on the context runs once it ends; stop prevents it.
func TestWithTimeoutAfterFunc(t *testing.T) {
	n := New(t)
	n.Run(func(ctx context.Context) {
		c, cancel := n.WithTimeout(ctx, time.Second)
		defer cancel()
		var mu sync.Mutex
		var ran []string
		done := make(chan struct{})
		context.AfterFunc(c, func() { mu.Lock(); ran = append(ran, "a"); mu.Unlock(); close(done) })
		stop := context.AfterFunc(c, func() { mu.Lock(); ran = append(ran, "b"); mu.Unlock() })
		if !stop() {
			t.Errorf("stop before the end reported false")
		}
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(ran) != 1 || ran[0] != "a" {
			t.Errorf("ran %v; want only a", ran)
		}
	})
}

func TestWithDeadlineRejections(t *testing.T) {
	var nilCtx context.Context
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { WithDeadline(nilCtx, clock.Real{}, time.Now()) }, "emutest.WithDeadline: nil parent context; pass the run's context"},
		{func() { WithDeadline(context.Background(), nil, time.Now()) }, "emutest.WithDeadline: nil clock; pass the run's clock (emu.Net.Clock)"},
		{func() { WithTimeout(context.Background(), nil, time.Second) }, "emutest.WithTimeout: nil clock; pass the run's clock (emu.Net.Clock)"},
	} {
		func() {
			defer func() {
				if r := recover(); r != c.want {
					t.Errorf("panicked with %v; want %q", r, c.want)
				}
			}()
			c.f()
		}()
	}
}

// A timeout of math.MaxInt64, or a deadline in the year 2500, set after
// run time has moved, lies past the end of the clock's time: the context
// never ends by itself.
func TestWithTimeoutAtEndOfTime(t *testing.T) {
	n := New(t)
	n.Run(func(ctx context.Context) {
		n.Sleep(ctx, time.Second)
		forever, cancel := n.WithTimeout(ctx, math.MaxInt64)
		defer cancel()
		y2500, cancel2500 := n.WithDeadline(ctx, time.Date(2500, time.January, 1, 0, 0, 0, 0, time.UTC))
		defer cancel2500()
		onClock, cancelOnClock := WithTimeout(ctx, n.Clock(), math.MaxInt64)
		defer cancelOnClock()
		n.Sleep(ctx, time.Hour)
		for name, c := range map[string]context.Context{"WithTimeout(math.MaxInt64)": forever, "WithDeadline(2500)": y2500, "emutest.WithTimeout(math.MaxInt64)": onClock} {
			if err := c.Err(); err != nil {
				t.Errorf("%s: ended with %v after %v of run time", name, err, n.Now().Sub(clock.Epoch))
			}
		}
		if d, ok := forever.Deadline(); !ok || d.Before(time.Date(2292, time.January, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("WithTimeout(math.MaxInt64).Deadline() = %v, %v; want about 292 years from now", d, ok)
		}
	})
}
