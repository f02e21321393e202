//go:build linux

package kernel

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// The TUN bridge carries a trace as the emulated link does: kernel TCP's
// data packets leave the link at the trace's opportunities (whole
// milliseconds, one 1500-byte packet each), so 600 KB take at least
// the 414 opportunities of its full-sized segments (1448 bytes of data
// each, with timestamps).
func TestTraceThroughTheBridge(t *testing.T) {
	needRoot(t)
	tr, err := link.ParseTrace(strings.NewReader("1\n"), "12mbit.trace")
	if err != nil {
		t.Fatal(err)
	}
	n := newNet(t, Config{Link: link.Config{Delay: 10 * time.Millisecond}.WithTrace(link.BtoA, tr), Via: TUN})
	var mu sync.Mutex
	var leave []time.Duration
	if !n.Observe(func(e link.Event) {
		if e.Kind == link.EventQueue && e.Dir == link.BtoA && len(e.Packet) > 1000 {
			mu.Lock()
			leave = append(leave, e.Finish)
			mu.Unlock()
		}
	}) {
		t.Fatal("the TUN link has no events")
	}
	ln, err := n.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const size = 600_000
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(make([]byte, size))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := n.Dial(ctx, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	got, err := io.Copy(io.Discard, c)
	took := time.Since(start)
	if err != nil || got != size {
		t.Fatalf("read %d bytes, %v; want %d", got, err, size)
	}
	if took < 414*time.Millisecond {
		t.Errorf("600 KB took %v over a 12 Mbit/s trace; want at least 414 ms", took)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[time.Duration]bool{}
	for _, f := range leave {
		if f%time.Millisecond != 0 || seen[f] {
			t.Fatalf("a data packet left the link at %v: not on an opportunity of its own", f)
		}
		seen[f] = true
	}
	if len(leave) < size/1448 {
		t.Errorf("%d full-sized data packets left the link; want the %d or more of 600 KB", len(leave), size/1448)
	}
}
