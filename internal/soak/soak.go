// Package soak drives bounded load at a TCP listener on loopback and
// watches what the process holds meanwhile, for the proxies' soak tests
// and benchmarks: connections that reset, that stop half way, that send
// a byte at a time; the peak resident memory and open descriptors.
//
// Every load here is bounded in count and in time by its caller; a
// connection that does not complete within its deadline is a stall, the
// failure these tests exist to find.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Peaks is what a Watch saw: the highest resident set and number of open
// descriptors, and the heap in use after a collection at the start and
// the end.
type Peaks struct {
	RSS      uint64 // bytes; 0 where the system does not say
	FDs      int    // -1 where the system does not say
	HeapFrom uint64 // live heap when the watch began
	HeapTo   uint64 // live heap when it stopped
}

// Watcher samples the process every few milliseconds until Stop.
type Watcher struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	p    Peaks
}

// Watch starts a Watcher; its caller must Stop it.
func Watch() *Watcher {
	w := &Watcher{stop: make(chan struct{}), done: make(chan struct{})}
	w.p = Peaks{FDs: -1, HeapFrom: LiveHeap()}
	w.sample()
	go w.run()
	return w
}

func (w *Watcher) run() {
	defer close(w.done)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.sample()
		}
	}
}

func (w *Watcher) sample() {
	rss, fds := RSS(), FDs()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.p.RSS = max(w.p.RSS, rss)
	w.p.FDs = max(w.p.FDs, fds)
}

// Stop ends the sampling and returns the peaks. The live heap at the
// end is read after a collection.
func (w *Watcher) Stop() Peaks {
	close(w.stop)
	<-w.done
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.p.HeapTo = LiveHeap()
	return w.p
}

// LiveHeap collects twice (the first collection's finalizers and pool
// victims go in the second) and returns the heap in use.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// RSS is the process's resident set in bytes (VmRSS of
// /proc/self/status); 0 where there is no such file.
func RSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// FDs is how many descriptors the process has open; -1 where the system
// does not list them (/proc/self/fd).
func FDs() int {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return -1
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return -1
	}
	return len(names) - 1 // the directory itself
}

// Load is a bounded load: Conns connections to Addr, Parallel at a time,
// each done by Do within PerConn.
type Load struct {
	Addr     string
	Conns    int
	Parallel int           // 0 means 1
	PerConn  time.Duration // 0 means 10 s
	// Do runs one connection to its end; i counts from 0. It must return
	// once ctx ends.
	Do Do
}

// Result is what a Load did.
type Result struct {
	Conns   int           // connections that completed
	Elapsed time.Duration // for all of them
	Err     error         // the first failure, if any
}

// PerSecond is the rate of completed connections.
func (r Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Conns) / r.Elapsed.Seconds()
}

// Run runs the load and returns when every connection ended or ctx did.
func (l Load) Run(ctx context.Context) Result {
	par := max(l.Parallel, 1)
	per := l.PerConn
	if per == 0 {
		per = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		done  int
		first error
	)
	start := time.Now()
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				cctx, ccancel := context.WithTimeout(ctx, per)
				err := l.Do(cctx, i, l.Addr)
				ccancel()
				mu.Lock()
				if err == nil {
					done++
				} else if first == nil {
					first = fmt.Errorf("connection %d of %d: %w", i, l.Conns, err)
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	for i := range l.Conns {
		select {
		case next <- i:
			continue
		case <-ctx.Done():
		}
		break
	}
	close(next)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if first == nil && done < l.Conns {
		first = fmt.Errorf("%d of %d connections done: %w", done, l.Conns, context.Cause(ctx))
	}
	return Result{Conns: done, Elapsed: time.Since(start), Err: first}
}

// Reset connects, and closes with SO_LINGER 0: the peer sees a reset.
// A connection the server reset first (a proxy whose upstream refuses
// resets its client) counts as done, even when the reset comes before
// the connect has returned.
func Reset(ctx context.Context, _ int, addr string) error {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	if err != nil {
		return err
	}
	c.(*net.TCPConn).SetLinger(0)
	return c.Close()
}

// Echo writes a line and reads it back within ctx: the probe that shows
// the path still carries bytes.
func Echo(ctx context.Context, i int, addr string) error {
	return connected(ctx, addr, func(c net.Conn) error {
		msg := fmt.Sprintf("probe %d\n", i)
		if _, err := c.Write([]byte(msg)); err != nil {
			return err
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil {
			return fmt.Errorf("echo read: %w", err)
		}
		if string(got) != msg {
			return fmt.Errorf("echo %q; want %q", got, msg)
		}
		return nil
	})
}

// A Do is what a Load does with one connection.
type Do = func(ctx context.Context, i int, addr string) error

// connected dials addr and runs f on the connection, which ctx's
// deadline bounds and which it closes after.
func connected(ctx context.Context, addr string, f func(c net.Conn) error) error {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	return f(c)
}

// pause waits d, or less if ctx ends first: then it returns ctx's error.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Hold connects and sends nothing until hold passes or ctx ends: a
// client that never finishes its request.
func Hold(hold time.Duration) Do {
	return func(ctx context.Context, _ int, addr string) error {
		return connected(ctx, addr, func(net.Conn) error {
			pause(ctx, hold)
			return nil
		})
	}
}

// HalfClose connects, sends a line and its end (a FIN), then reads
// nothing until hold passes or ctx ends: a client gone quiet with its
// half of the connection closed, whose reply waits unread.
func HalfClose(hold time.Duration) Do {
	return func(ctx context.Context, _ int, addr string) error {
		return connected(ctx, addr, func(c net.Conn) error {
			if _, err := c.Write([]byte("half\n")); err != nil {
				return err
			}
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				return err
			}
			pause(ctx, hold)
			return nil
		})
	}
}

// Slowloris connects and sends n bytes, one every gap, then closes.
func Slowloris(n int, gap time.Duration) Do {
	return func(ctx context.Context, _ int, addr string) error {
		return connected(ctx, addr, func(c net.Conn) error {
			for range n {
				if _, err := c.Write([]byte{'x'}); err != nil {
					return err
				}
				if err := pause(ctx, gap); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// SOCKSRefused asks a SOCKS5 server at addr (RFC 1928, no
// authentication) to CONNECT to target, a loopback host:port where
// nothing listens, and expects a reply that is not success.
func SOCKSRefused(target netip.AddrPort) Do {
	return func(ctx context.Context, _ int, addr string) error {
		return connected(ctx, addr, func(c net.Conn) error { return socksRefused(c, target) })
	}
}

// socksRefused is SOCKSRefused on a connection to the server.
func socksRefused(c net.Conn, target netip.AddrPort) error {
	ip := target.Addr().As4()
	req := []byte{5, 1, 0, 5, 1, 0, 1, ip[0], ip[1], ip[2], ip[3], byte(target.Port() >> 8), byte(target.Port())}
	if _, err := c.Write(req); err != nil {
		return err
	}
	var rep [4]byte // the method chosen (2 bytes), then the reply's version and code
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		return fmt.Errorf("SOCKS5 reply: %w", err)
	}
	if rep[0] != 5 || rep[1] != 0 || rep[2] != 5 {
		return fmt.Errorf("SOCKS5 reply % x; want 05 00 05 and a failure code", rep)
	}
	if rep[3] == 0 {
		return fmt.Errorf("SOCKS5 CONNECT to %v succeeded; want it refused", target)
	}
	return nil
}

// Bounds are what a soak asserts of a load, chosen to hold on a loaded
// machine: no connection stalls, and what the load took is given back.
type Bounds struct {
	PerConn time.Duration // for one connection, the load's or the probe's
	// Drain is how long the server under test may take, after the load
	// and the probe, to end its connections (settled) and close their
	// descriptors.
	Drain time.Duration
	// HeapSlack is how far above its level before the load the live
	// heap may be once every connection has ended; FDSlack how many
	// descriptors more may stay open.
	HeapSlack uint64
	FDSlack   int
}

// Measure runs load, then probe, which must pass: a server that took
// the load but carries nothing since has stalled. It then waits up to
// b.Drain for settled (nil: always) and for the descriptors to come back,
// fails t where a bound does not hold, and returns the load's result and
// the peaks seen meanwhile.
func Measure(t testing.TB, load, probe Load, settled func() bool, b Bounds) (Result, Peaks) {
	t.Helper()
	if settled == nil {
		settled = func() bool { return true }
	}
	load.PerConn, probe.PerConn = b.PerConn, b.PerConn
	fds := FDs()
	w := Watch()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(load.Conns/max(load.Parallel, 1)+probe.Conns+1)*b.PerConn)
	defer cancel()
	r := load.Run(ctx)
	if r.Err != nil {
		w.Stop()
		t.Fatalf("the load: %v", r.Err)
	}
	if err := probe.Run(ctx).Err; err != nil {
		w.Stop()
		t.Fatalf("after %d connections of the load, a probe does not cross: %v", load.Conns, err)
	}
	deadline := time.Now().Add(b.Drain)
	for (!settled() || fds >= 0 && FDs() > fds+b.FDSlack) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	peaks := w.Stop()
	if !settled() {
		t.Errorf("connections still open %v after the load ended; want none", b.Drain)
	}
	if now := FDs(); fds >= 0 && now > fds+b.FDSlack {
		t.Errorf("%d descriptors open %v after the load, %d before; want at most %d more", now, b.Drain, fds, b.FDSlack)
	}
	if peaks.HeapTo > peaks.HeapFrom+b.HeapSlack {
		t.Errorf("live heap %d KiB after the load, %d KiB before; want at most %d KiB more", peaks.HeapTo>>10, peaks.HeapFrom>>10, b.HeapSlack>>10)
	}
	t.Logf("%d connections in %v (%.0f/s), peak RSS %d MiB, peak descriptors %d, live heap %d → %d KiB",
		r.Conns, r.Elapsed.Round(time.Millisecond), r.PerSecond(), peaks.RSS>>20, peaks.FDs, peaks.HeapFrom>>10, peaks.HeapTo>>10)
	return r, peaks
}

// Report adds a soak's figures to a benchmark's.
func Report(b *testing.B, r Result, p Peaks) {
	b.ReportMetric(r.PerSecond(), "conns/s")
	b.ReportMetric(float64(p.RSS)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(p.FDs), "peak-fds")
}

// EchoServer listens on loopback and echoes each connection until the
// returned stop, which closes the listener and every connection and
// waits for their goroutines. It keeps nothing of a connection that
// ended.
func EchoServer() (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		open = map[net.Conn]bool{}
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.Copy(c, c)
				c.Close()
				mu.Lock()
				delete(open, c)
				mu.Unlock()
			}()
		}
	}()
	return ln.Addr().String(), func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}, nil
}

// FreeAddr is a loopback host:port where nothing listens, for a moment:
// a refused upstream, or an address to listen on next.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
