//go:build linux

package kernel

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// After Close, Dial and Listen fail with net.ErrClosed, and an Accept
// waiting on a listener from before returns with it, as on the emulated
// network (docs/ERRORS.md).
func TestClosedNetErrors(t *testing.T) {
	needRoot(t)
	n := newNet(t, Config{Via: TUN})
	ln, err := n.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		accepted <- err
	}()
	c, err := n.Dial(context.Background(), 80)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := ln.Accept()
		accepted <- err
	}()
	n.Close()
	select {
	case err := <-accepted:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v; want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still blocked 5 s after Close")
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write on a connection after Close: %v; want net.ErrClosed", err)
	}
	if _, err := n.Dial(context.Background(), 80); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Dial after Close: %v; want net.ErrClosed", err)
	}
	if _, err := n.Listen(81); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Listen after Close: %v; want net.ErrClosed", err)
	}
}
