package tcpstack

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
)

// The error table of docs/ERRORS.md, run on the emulated hosts and on
// kernel sockets over loopback. Each row names every standard error the
// situation's error matches with errors.Is (among errorKinds) and whether
// it is a net.Error with Timeout(); both backends must give exactly that,
// so they agree on every row.

// errorKinds are the standard errors a row's error is checked against.
var errorKinds = []struct {
	name string
	err  error
}{
	{"ECONNREFUSED", syscall.ECONNREFUSED},
	{"ECONNRESET", syscall.ECONNRESET},
	{"EPIPE", syscall.EPIPE},
	{"ETIMEDOUT", syscall.ETIMEDOUT},
	{"ENOTCONN", syscall.ENOTCONN},
	{"net.ErrClosed", net.ErrClosed},
	{"io.EOF", io.EOF},
	{"os.ErrDeadlineExceeded", os.ErrDeadlineExceeded},
	{"context.Canceled", context.Canceled},
	{"context.DeadlineExceeded", context.DeadlineExceeded},
}

// kinds lists what err matches: the names of errorKinds, then "Timeout()"
// if it is a net.Error that says so.
func kinds(err error) string {
	var got []string
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			got = append(got, k.name)
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		got = append(got, "Timeout()")
	}
	return strings.Join(got, " ")
}

// errBackend is one kind of socket: a listener and a dialer on one
// network, and that network's clock.
type errBackend struct {
	listen   func() (net.Listener, uint16, error)
	dial     func(ctx context.Context, port uint16) (net.Conn, error)
	wait     func(d time.Duration) // lets d pass on the network's clock
	now      func() time.Time
	closeNet func() // closes the whole network; nil if there is none
	// freePort returns a port nobody listens on.
	freePort func() uint16
	// dialNowhere dials an address that never answers, with a context
	// that ends with context.DeadlineExceeded after d on the network's
	// clock; nil if the backend has no such address.
	dialNowhere func(d time.Duration) error
}

// clockCtx is a context that ends with context.DeadlineExceeded when
// done is closed (by a timer on the run's clock).
type clockCtx struct {
	context.Context
	done chan struct{}
}

func (c *clockCtx) Done() <-chan struct{} { return c.done }
func (c *clockCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func emulatedBackend(t *testing.T) *errBackend { return emulatedBackendOf(t, GVisor) }

// netemuBackend is the emulated hosts with netemu's TCP.
func netemuBackend(t *testing.T) *errBackend { return emulatedBackendOf(t, Netemu) }

func emulatedBackendOf(t *testing.T, impl Impl) *errBackend {
	p := newPair(t, link.Config{Delay: time.Millisecond}, TCPConfig{Impl: impl})
	return &errBackend{
		listen: func() (net.Listener, uint16, error) {
			ln, err := p.b.Listen(0)
			if err != nil {
				return nil, 0, err
			}
			return ln, ln.AddrPort().Port(), nil
		},
		dial: func(ctx context.Context, port uint16) (net.Conn, error) {
			c, err := p.a.Dial(ctx, p.b.AddrPort(port))
			if err != nil {
				return nil, err // not a typed nil in the interface
			}
			return c, nil
		},
		wait:     func(d time.Duration) { clock.Sleep(context.Background(), p.clk, d) },
		now:      p.clk.Now,
		closeNet: func() { p.a.Close(); p.b.Close() },
		freePort: func() uint16 { return 81 },
		dialNowhere: func(d time.Duration) error {
			ctx := &clockCtx{Context: context.Background(), done: make(chan struct{})}
			p.clk.AfterFunc(d, func() { close(ctx.done) })
			// The server host drops packets for an address not its own.
			_, err := p.a.Dial(ctx, netip.MustParseAddrPort("198.18.0.3:80"))
			return err
		},
	}
}

func kernelBackend(t *testing.T) *errBackend {
	return &errBackend{
		listen: func() (net.Listener, uint16, error) {
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				return nil, 0, err
			}
			return ln, uint16(ln.Addr().(*net.TCPAddr).Port), nil
		},
		dial: func(ctx context.Context, port uint16) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp4", (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(port)}).String())
		},
		wait: time.Sleep,
		now:  time.Now,
		freePort: func() uint16 {
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			return uint16(ln.Addr().(*net.TCPAddr).Port)
		},
	}
}

// connect returns both ends of a new connection; the test's cleanup
// closes them.
func (b *errBackend) connect(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, port, err := b.listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	client, err = b.dial(context.Background(), port)
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.FailNow()
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// reset makes the server reset the connection: it closes with the
// client's byte unread, and the RST has arrived when reset returns.
func (b *errBackend) reset(t *testing.T) (client net.Conn) {
	client, server := b.connect(t)
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b.wait(10 * time.Millisecond)
	server.Close()
	b.wait(10 * time.Millisecond)
	return client
}

type errRow struct {
	name string
	// want is kinds of the row's error: the standard errors it matches.
	want string
	// kernel is why kernel sockets have no such situation; "" if they do.
	kernel string
	run    func(t *testing.T, b *errBackend) error
}

var errRows = []errRow{
	{name: "refused", want: "ECONNREFUSED",
		run: func(t *testing.T, b *errBackend) error {
			_, err := b.dial(context.Background(), b.freePort())
			return err
		}},
	{name: "read reset by peer", want: "ECONNRESET",
		run: func(t *testing.T, b *errBackend) error {
			_, err := b.reset(t).Read(make([]byte, 1))
			return err
		}},
	{name: "read after the peer's abort (SetLinger 0, Close)", want: "ECONNRESET",
		run: func(t *testing.T, b *errBackend) error {
			c, s := b.connect(t)
			if err := s.(interface{ SetLinger(int) error }).SetLinger(0); err != nil {
				t.Fatal(err)
			}
			s.Close() // nothing unread: without the linger it would be a FIN
			b.wait(10 * time.Millisecond)
			_, err := c.Read(make([]byte, 1))
			return err
		}},
	{name: "write after peer reset", want: "ECONNRESET",
		run: func(t *testing.T, b *errBackend) error {
			_, err := b.reset(t).Write([]byte("y"))
			return err
		}},
	{name: "write after peer reset seen by a read", want: "EPIPE",
		run: func(t *testing.T, b *errBackend) error {
			c := b.reset(t)
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("Read after the reset: %v; want ECONNRESET", err)
			}
			_, err := c.Write([]byte("y"))
			return err
		}},
	{name: "read after reset seen by a read", want: "io.EOF",
		run: func(t *testing.T, b *errBackend) error {
			c := b.reset(t)
			c.Read(make([]byte, 1))
			_, err := c.Read(make([]byte, 1))
			return err
		}},
	{name: "read after peer close", want: "io.EOF",
		run: func(t *testing.T, b *errBackend) error {
			c, s := b.connect(t)
			s.Close()
			_, err := c.Read(make([]byte, 1))
			return err
		}},
	{name: "write after own CloseWrite", want: "EPIPE",
		run: func(t *testing.T, b *errBackend) error {
			c, _ := b.connect(t)
			if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			_, err := c.Write([]byte("y"))
			return err
		}},
	{name: "read after own Close", want: "net.ErrClosed",
		run: func(t *testing.T, b *errBackend) error {
			c, _ := b.connect(t)
			c.Close()
			_, err := c.Read(make([]byte, 1))
			return err
		}},
	{name: "read after own Close with data waiting", want: "net.ErrClosed",
		run: func(t *testing.T, b *errBackend) error {
			c, s := b.connect(t)
			s.Write([]byte("x"))
			b.wait(10 * time.Millisecond)
			c.Close()
			_, err := c.Read(make([]byte, 1))
			return err
		}},
	{name: "write after own Close", want: "net.ErrClosed",
		run: func(t *testing.T, b *errBackend) error {
			c, _ := b.connect(t)
			c.Close()
			_, err := c.Write([]byte("y"))
			return err
		}},
	{name: "second Close", want: "net.ErrClosed",
		run: func(t *testing.T, b *errBackend) error {
			c, _ := b.connect(t)
			c.Close()
			return c.Close()
		}},
	{name: "accept after own Close", want: "net.ErrClosed",
		run: func(t *testing.T, b *errBackend) error {
			ln, _, err := b.listen()
			if err != nil {
				t.Fatal(err)
			}
			ln.Close()
			_, err = ln.Accept()
			return err
		}},
	{name: "read deadline exceeded", want: "os.ErrDeadlineExceeded Timeout()",
		run: func(t *testing.T, b *errBackend) error {
			c, _ := b.connect(t)
			c.SetReadDeadline(b.now().Add(5 * time.Millisecond))
			_, err := c.Read(make([]byte, 1))
			return err
		}},
	{name: "write deadline passed", want: "os.ErrDeadlineExceeded Timeout()",
		run: func(t *testing.T, b *errBackend) error {
			c, _ := b.connect(t)
			c.SetWriteDeadline(b.now().Add(-time.Second))
			_, err := c.Write([]byte("y"))
			return err
		}},
	{name: "dial canceled", want: "context.Canceled",
		run: func(t *testing.T, b *errBackend) error {
			ln, port, err := b.listen()
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err = b.dial(ctx, port)
			return err
		}},
	{name: "dial timed out", want: "context.DeadlineExceeded Timeout()",
		run: func(t *testing.T, b *errBackend) error {
			ln, port, err := b.listen()
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
			defer cancel()
			_, err = b.dial(ctx, port)
			return err
		}},
	{name: "dial timed out while connecting", want: "context.DeadlineExceeded Timeout()",
		kernel: "loopback answers every SYN at once; Go's net maps a connect that times out as it maps an expired context (the row above)",
		run: func(t *testing.T, b *errBackend) error {
			start := b.now()
			err := b.dialNowhere(3 * time.Second)
			if d := b.now().Sub(start); d != 3*time.Second {
				t.Errorf("Dial gave up after %v; want 3s", d)
			}
			return err
		}},
	{name: "dial after network close", want: "net.ErrClosed",
		kernel: "kernel sockets have no network to close",
		run: func(t *testing.T, b *errBackend) error {
			b.closeNet()
			_, err := b.dial(context.Background(), 80)
			return err
		}},
	{name: "listen after network close", want: "net.ErrClosed",
		kernel: "kernel sockets have no network to close",
		run: func(t *testing.T, b *errBackend) error {
			b.closeNet()
			_, _, err := b.listen()
			return err
		}},
	{name: "accept after network close", want: "net.ErrClosed",
		kernel: "kernel sockets have no network to close",
		run: func(t *testing.T, b *errBackend) error {
			ln, _, err := b.listen()
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			b.closeNet()
			_, err = ln.Accept()
			return err
		}},
	{name: "write after network close", want: "net.ErrClosed",
		kernel: "kernel sockets have no network to close",
		run: func(t *testing.T, b *errBackend) error {
			c, _ := b.connect(t)
			b.closeNet()
			_, err := c.Write([]byte("y"))
			return err
		}},
	{name: "read after network close", want: "net.ErrClosed",
		kernel: "kernel sockets have no network to close",
		run: func(t *testing.T, b *errBackend) error {
			c, _ := b.connect(t)
			b.closeNet()
			_, err := c.Read(make([]byte, 1))
			return err
		}},
}

func runErrRows(t *testing.T, backend func(t *testing.T) *errBackend, kernel bool) {
	for _, r := range errRows {
		t.Run(r.name, func(t *testing.T) {
			if kernel && r.kernel != "" {
				t.Skip(r.kernel)
			}
			err := r.run(t, backend(t))
			if got := kinds(err); got != r.want {
				t.Errorf("error %v matches [%s]; want [%s]", err, got, r.want)
			}
		})
	}
}

func TestErrorTableEmulated(t *testing.T) { runErrRows(t, emulatedBackend, false) }

// The same rows on hosts running netemu's TCP.
func TestErrorTableNetemu(t *testing.T) { runErrRows(t, netemuBackend, false) }

// The same rows on kernel sockets over 127.0.0.1: what the emulated hosts
// must match.
func TestErrorTableKernel(t *testing.T) { runErrRows(t, kernelBackend, true) }
