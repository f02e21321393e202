package emu

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// Reset churn on the real clock: a client that connects and resets at
// once, thousands of times, against a server that accepts in a loop. A
// reset for a child the listener is handing out meets Accept from the
// other side; the two must take the endpoints' locks in one order (see
// tcp's endpoint), or the link's delivery goroutine and the accepting
// goroutine wait on each other forever. The race detector cannot see
// that: only churn finds it.
const (
	churnDials = 3000             // connections per run
	churnLimit = 60 * time.Second // wall time for all of them, on a loaded machine
)

func TestResetChurnRealClock(t *testing.T) {
	for _, impl := range []tcpstack.Impl{tcpstack.Netemu, tcpstack.GVisor} {
		t.Run(string(impl), func(t *testing.T) {
			resetChurn(t, impl)
		})
	}
}

func resetChurn(t *testing.T, impl tcpstack.Impl) {
	n, err := New(Config{Clock: Real, TCP: tcpstack.TCPConfig{Impl: impl},
		Link: link.Config{Delay: 50 * time.Microsecond, Rate: 1e9}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := n.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	var accepted sync.WaitGroup
	accepted.Add(1)
	go func() {
		defer accepted.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Half the accepted connections are closed at once, racing
			// the client's reset; the rest when the reset has arrived.
			go func() {
				var b [1]byte
				c.Read(b[:])
				c.Close()
			}()
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), churnLimit)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for i := range churnDials {
			c, err := n.Dial(ctx, 80)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					buf := make([]byte, 1<<20)
					t.Logf("%s", buf[:runtime.Stack(buf, true)])
				}
				done <- churnError{i, err}
				return
			}
			if err := c.(*tcpstack.Conn).SetLinger(0); err != nil {
				done <- err
				return
			}
			c.Close()
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(churnLimit + 5*time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("no dial returned in %v: the network is wedged\n%s", churnLimit+5*time.Second, buf[:runtime.Stack(buf, true)])
	}
	closed := make(chan error, 1)
	go func() {
		ln.Close()
		closed <- n.Close()
	}()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Net.Close did not return in 10s: the network is wedged")
	}
	accepted.Wait()
}

type churnError struct {
	i   int
	err error
}

func (e churnError) Error() string {
	if errors.Is(e.err, context.DeadlineExceeded) {
		return fmt.Sprintf("dial %d of %d did not finish within %v: the network is wedged", e.i, churnDials, churnLimit)
	}
	return fmt.Sprintf("dial %d: %v", e.i, e.err)
}

// Conn.Ended tells a connection reset from one the peer only half
// closed, with either TCP (gVisor's adds a read-hang-up event to any
// readiness answer once the peer's FIN is in).
func TestConnEnded(t *testing.T) {
	for _, impl := range []tcpstack.Impl{tcpstack.Netemu, tcpstack.GVisor} {
		t.Run(string(impl), func(t *testing.T) {
			n, err := New(Config{Clock: Real, TCP: tcpstack.TCPConfig{Impl: impl}})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			ln, err := n.Listen(80)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			c, err := n.Dial(context.Background(), 80)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			sc := s.(*tcpstack.Conn)
			if sc.Ended() {
				t.Fatal("an open connection has ended")
			}
			c.CloseWrite()
			s.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := s.Read(make([]byte, 1)); err == nil {
				t.Fatal("read data; want the end of the stream")
			}
			if sc.Ended() {
				t.Error("a connection the peer half closed has ended; want it open")
			}
			c.(*tcpstack.Conn).SetLinger(0)
			c.Close()
			deadline := time.Now().Add(10 * time.Second)
			for !sc.Ended() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if !sc.Ended() {
				t.Error("a connection the peer reset has not ended")
			}
			s.Close()
		})
	}
}
