package emu

import (
	"context"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"go.uber.org/goleak"
)

// Sleep(math.MaxInt64) after run time has moved saturates at the end of
// time: it does not return at once, and with nothing else scheduled the
// run is stalled at the instant it reached.
func TestSleepToEndOfTimeStalls(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := newNet(t, Config{StallTimeout: 50 * time.Millisecond})
	var slept error
	err := n.Run(context.Background(), func(ctx context.Context) error {
		if err := n.Sleep(ctx, time.Second); err != nil {
			return err
		}
		slept = n.Sleep(ctx, math.MaxInt64)
		return nil
	})
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "at virtual time 1s") {
		t.Errorf("Run returned %v; want a stall at virtual time 1s", err)
	}
	if !errors.Is(slept, context.Canceled) {
		t.Errorf("Sleep(math.MaxInt64) returned %v; want the stall's cancel", slept)
	}
	n.Close()
}

// A read deadline in the year 2500 is past the end of the clock's time:
// it never passes, and a Read waits for data.
func TestReadDeadlineInYear2500(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := newNet(t, Config{Link: link.Config{Delay: 5 * time.Millisecond}})
	err := n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Server().Listen(9)
		if err != nil {
			return err
		}
		defer ln.Close()
		n.Go(func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			n.Sleep(ctx, 2*time.Second)
			c.Write([]byte("x"))
			io.Copy(io.Discard, c)
		})
		c, err := n.Client().Dial(ctx, n.Server().AddrPort(9))
		if err != nil {
			return err
		}
		defer c.Close()
		start := n.Now()
		c.SetReadDeadline(time.Date(2500, time.January, 1, 0, 0, 0, 0, time.UTC))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			t.Errorf("Read with a deadline in 2500 after %v: %v; want the byte", n.Now().Sub(start), err)
		}
		c.SetDeadline(time.Date(2500, time.January, 1, 0, 0, 0, 0, time.UTC))
		if _, err := c.Write([]byte("y")); err != nil {
			t.Errorf("Write with a deadline in 2500: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
}

// A panic in Run's function is an error carrying the value and the stack;
// the network is closed afterwards, releasing goroutines blocked on it.
func TestRunRecoversPanic(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := newNet(t, Config{Link: link.Config{Delay: 5 * time.Millisecond}})
	released := make(chan error, 1)
	err := n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Server().Listen(9)
		if err != nil {
			return err
		}
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				released <- err
				return
			}
			_, err = c.Read(make([]byte, 1))
			released <- err
			c.Close()
		}()
		c, err := n.Client().Dial(ctx, n.Server().AddrPort(9))
		if err != nil {
			return err
		}
		defer c.Close()
		panicHere()
		return nil
	})
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Run returned %v; want a *PanicError", err)
	}
	if pe.Value != "boom" || !strings.Contains(string(pe.Stack), "emu.panicHere") {
		t.Errorf("PanicError{Value: %v, Stack: %s}; want the value boom and a stack through panicHere", pe.Value, pe.Stack)
	}
	if msg := err.Error(); msg != "emu: panic inside the run: boom" {
		t.Errorf("Error() = %q", msg)
	}
	select {
	case err := <-released:
		if err == nil {
			t.Error("the server's Read returned no error after the panic")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server's Read is still blocked after Run returned")
	}
	if err := n.Run(context.Background(), func(context.Context) error { return nil }); err == nil || !strings.Contains(err.Error(), "closed Net") {
		t.Errorf("Run after a panic: %v; want the closed-Net error", err)
	}
	n.Close()
}

func panicHere() { panic("boom") }

// A panic in a goroutine started with Go during a Run ends the Run as a
// stall does: the context is canceled, the network closed, and Run
// returns the panic, with the function's own error joined.
func TestRunRecoversPanicInGo(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, mode := range []ClockMode{Virtual, Real} {
		t.Run(mode.String(), func(t *testing.T) {
			n := newNet(t, Config{Clock: mode, Link: link.Config{Delay: time.Millisecond}})
			sentinel := errors.New("sentinel")
			err := n.Run(context.Background(), func(ctx context.Context) error {
				ln, err := n.Server().Listen(9)
				if err != nil {
					return err
				}
				defer ln.Close()
				n.Go(func() {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					defer c.Close()
					panic(sentinel)
				})
				c, err := n.Client().Dial(ctx, n.Server().AddrPort(9))
				if err != nil {
					return err
				}
				defer c.Close()
				_, err = c.Read(make([]byte, 1))
				return err
			})
			var pe *PanicError
			if !errors.As(err, &pe) || !errors.Is(err, sentinel) {
				t.Fatalf("Run returned %v; want a *PanicError wrapping the value", err)
			}
			if !strings.Contains(string(pe.Stack), "TestRunRecoversPanicInGo") {
				t.Errorf("stack does not reach the panicking function:\n%s", pe.Stack)
			}
			n.Close()
		})
	}
}

// runtime.Goexit in Run's function (t.FailNow on the wrong goroutine)
// ends the Run with an error instead of hanging it.
func TestRunReportsGoexit(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := newNet(t, Config{})
	done := make(chan error, 1)
	go func() {
		done <- n.Run(context.Background(), func(context.Context) error {
			runtime.Goexit()
			return nil
		})
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "runtime.Goexit") {
			t.Errorf("Run returned %v; want an error naming runtime.Goexit", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run hangs after its function called runtime.Goexit")
	}
	n.Close()
}
