package proxy_test

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
	"go.uber.org/goleak"
)

// accepted returns both ends of a loopback connection: the one a client
// dialed, and the one accepted, which the test hands to Serve.
func accepted(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return client, server
}

func echo(c *net.TCPConn) {
	defer c.Close()
	io.Copy(c, c)
}

// A proxy with no listener carries a connection the caller accepted, as
// a forward does: the bytes both ways, the link's round trip, a record
// naming it.
func TestServe(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last, after the other cleanups
	up := upstream(t, echo)
	n := newNet(t, link.Config{Delay: 20 * time.Millisecond})
	ended := make(chan proxy.Record, 1)
	p := start(t, n, proxy.Config{OnEnd: func(r proxy.Record) { ended <- r }, FirstID: 7})
	if a := p.Addrs(); len(a) != 0 {
		t.Fatalf("Addrs of a proxy without listeners: %v", a)
	}
	client, server := accepted(t)
	if err := p.Serve(server, up); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(client, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo through Serve: %q, %v", got, err)
	}
	// The handshake across the link, then the bytes there and back.
	if el := time.Since(start); el < 80*time.Millisecond {
		t.Errorf("echo after %v; want at least 2 round trips of 40 ms", el)
	}
	client.Close()
	r := <-ended
	if !strings.HasPrefix(r.Via, "serve ") || r.Upstream != up || r.BytesUp != 4 || r.BytesDown != 4 || r.Err != "" || r.ID != 7 {
		t.Errorf("record %+v; want via serve, upstream %s, 4 bytes each way, no error, ID 7 (Config.FirstID)", r, up)
	}
	p.Close()
	n.Close()
}

// Serve refuses an upstream that is not host:port and a closed proxy,
// and resets the connection it was given.
func TestServeRefuses(t *testing.T) {
	n := newNet(t, link.Config{})
	p := start(t, n, proxy.Config{})
	client, server := accepted(t)
	if err := p.Serve(server, "nohost"); err == nil {
		t.Error("Serve to upstream \"nohost\": no error")
	}
	if _, err := client.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("the refused connection reads %v; want a reset", err)
	}
	p.Close()
	client, server = accepted(t)
	if err := p.Serve(server, "127.0.0.1:9"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve after Close: %v; want net.ErrClosed", err)
	}
	if _, err := client.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("the refused connection reads %v; want a reset", err)
	}
}

// cutShaper passes on limit bytes, then closes the connection normally,
// or resets it; it counts the ends of stream it is told of.
type cutShaper struct {
	st    *proxy.Stream
	limit int
	reset bool
	ends  *int
	mu    *sync.Mutex
}

func (c *cutShaper) Write(w io.Writer, p []byte) error {
	if len(p) > c.limit {
		p = p[:c.limit]
	}
	c.limit -= len(p)
	if _, err := w.Write(p); err != nil {
		return err
	}
	if c.limit == 0 {
		if c.reset {
			c.st.Reset("cut")
		} else {
			c.st.Close()
		}
	}
	return nil
}

func (c *cutShaper) EndOfStream() {
	c.mu.Lock()
	*c.ends++
	c.mu.Unlock()
}

// A Shaper writes its direction's bytes past the link: one that passes on
// 5 bytes and closes leaves the upstream 5 bytes and an end of stream;
// one that resets resets the client. Each is asked for once per
// direction, with the direction named.
func TestShaper(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last, after the other cleanups
	for _, reset := range []bool{false, true} {
		got := make(chan string, 1)
		up := upstream(t, func(c *net.TCPConn) {
			defer c.Close()
			b, _ := io.ReadAll(c)
			got <- string(b)
		})
		n := newNet(t, link.Config{})
		var mu sync.Mutex
		var dirs []proxy.Direction
		ends := 0
		ended := make(chan proxy.Record, 1)
		p := start(t, n, proxy.Config{OnEnd: func(r proxy.Record) { ended <- r }, Shape: func(st *proxy.Stream) proxy.Shaper {
			mu.Lock()
			dirs = append(dirs, st.Direction())
			mu.Unlock()
			if st.Direction() == proxy.Down {
				return nil
			}
			return &cutShaper{st: st, limit: 5, reset: reset, ends: &ends, mu: &mu}
		}})
		client, server := accepted(t)
		if err := p.Serve(server, up); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Write([]byte("abcdefgh")); err != nil {
			t.Fatal(err)
		}
		_, err := client.Read(make([]byte, 1))
		if reset {
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("reset: the client reads %v; want a reset", err)
			}
		} else {
			if err != io.EOF {
				t.Errorf("close: the client reads %v; want an end of stream", err)
			}
			if s := <-got; s != "abcde" {
				t.Errorf("close: the upstream read %q; want abcde", s)
			}
		}
		r := <-ended
		if want := map[bool]string{false: "", true: "cut"}[reset]; r.Err != want {
			t.Errorf("reset %v: the record's error %q; want %q", reset, r.Err, want)
		}
		p.Close()
		n.Close()
		mu.Lock()
		if len(dirs) != 2 || dirs[0] == dirs[1] {
			t.Errorf("Shape was asked for %v; want each direction once", dirs)
		}
		if ends != 0 {
			t.Errorf("the shaper was told of %d ends of stream; the client sent none", ends)
		}
		mu.Unlock()
	}
}

// A Shaper that waits holds its direction, and gives up when the
// connection stops; it hears of the end of stream before it is passed on.
func TestShaperEndOfStream(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last, after the other cleanups
	up := upstream(t, echo)
	n := newNet(t, link.Config{})
	p := start(t, n, proxy.Config{Shape: func(st *proxy.Stream) proxy.Shaper {
		if st.Direction() == proxy.Up {
			return nil
		}
		return &slowEnd{st: st, delay: 150 * time.Millisecond}
	}})
	client, server := accepted(t)
	if err := p.Serve(server, up); err != nil {
		t.Fatal(err)
	}
	client.Write([]byte("x"))
	start := time.Now()
	client.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(client)
	if string(b) != "x" || err != nil {
		t.Fatalf("read %q, %v; want x and the end", b, err)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("the end of stream came after %v; the shaper held it 150 ms", el)
	}
	p.Close()
	n.Close()
}

type slowEnd struct {
	st    *proxy.Stream
	delay time.Duration
}

func (s *slowEnd) Write(w io.Writer, p []byte) error {
	_, err := w.Write(p)
	return err
}

func (s *slowEnd) EndOfStream() {
	select {
	case <-time.After(s.delay):
	case <-s.st.Done():
	}
}
