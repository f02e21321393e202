package toxiproxy_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	tpclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/netemu/netemu/toxiproxy"
)

// Times on a loaded machine: lower bounds are the model's (the link
// cannot be faster than its delay or its rate), upper bounds generous.
const slack = 3 * time.Second

// withProxy makes a server and a proxy to up, and returns the proxy.
func withProxy(t *testing.T, up string) *tpclient.Proxy {
	t.Helper()
	_, cl, _ := serve(t, toxiproxy.Config{})
	p, err := cl.CreateProxy("p", "127.0.0.1:0", up)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stamped is an echo upstream that reports when each chunk arrives.
func stamped(t *testing.T) (string, chan time.Time) {
	arrived := make(chan time.Time, 16)
	return upstream(t, func(c net.Conn) {
		b := make([]byte, 4096)
		for {
			n, err := c.Read(b)
			if n > 0 {
				select {
				case arrived <- time.Now():
				default:
				}
				c.Write(b[:n])
			}
			if err != nil {
				return
			}
		}
	}), arrived
}

// A latency toxic is the one-way delay of its direction: downstream, the
// bytes reach the upstream at once and come back 100 ms later; upstream,
// the other way round. The connection is warmed first (its handshake
// across the link pays the delay once too).
func TestLatencyIsOneWay(t *testing.T) {
	const latency = 100 * time.Millisecond
	for _, stream := range []string{"downstream", "upstream"} {
		t.Run(stream, func(t *testing.T) {
			up, arrived := stamped(t)
			p := withProxy(t, up)
			if _, err := p.AddToxic("", "latency", stream, 1, tpclient.Attributes{"latency": latency.Milliseconds()}); err != nil {
				t.Fatal(err)
			}
			c := dial(t, p.Listen)
			roundTrip(t, c, "warm")
			<-arrived
			start := time.Now()
			rtt := roundTrip(t, c, "ping")
			there := (<-arrived).Sub(start)
			back := rtt - there
			t.Logf("%s latency %v: there %v, back %v", stream, latency, there, back)
			slow, fast := back, there
			if stream == "upstream" {
				slow, fast = there, back
			}
			if slow < latency || slow > latency+slack {
				t.Errorf("%s: the toxic's direction took %v; want at least %v", stream, slow, latency)
			}
			if fast >= latency {
				t.Errorf("%s: the other direction took %v; want less than %v", stream, fast, latency)
			}
		})
	}
}

// The handshake across the link pays the latency: the first echo on a
// new connection takes the handshake's round trip and the echo's.
func TestLatencyHandshake(t *testing.T) {
	p := withProxy(t, echoServer(t))
	for _, stream := range []string{"downstream", "upstream"} {
		if _, err := p.AddToxic("", "latency", stream, 1, tpclient.Attributes{"latency": 50}); err != nil {
			t.Fatal(err)
		}
	}
	if el := roundTrip(t, dial(t, p.Listen), "x"); el < 200*time.Millisecond || el > 200*time.Millisecond+slack {
		t.Errorf("the first echo took %v; want 2 RTT of 100 ms (handshake, then the echo)", el)
	}
}

// A bandwidth toxic is its direction's rate: 300 KB at 300 KB/s take a
// second at least (the rate counts whole packets, so a little more).
func TestBandwidth(t *testing.T) {
	const size, rate = 300_000, 300 // bytes, KB/s
	up := upstream(t, func(c net.Conn) {
		c.Write(make([]byte, size))
	})
	p := withProxy(t, up)
	if _, err := p.AddToxic("", "bandwidth", "downstream", 1, tpclient.Attributes{"rate": rate}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Listen)
	start := time.Now()
	n, err := io.Copy(io.Discard, c)
	el := time.Since(start)
	if err != nil || n != size {
		t.Fatalf("read %d bytes, %v; want %d", n, err, size)
	}
	t.Logf("%d bytes at %d KB/s: %v (toxiproxy's model: %v; the data's share of a full packet, 1448 of 1500 bytes: %v)",
		size, rate, el, time.Duration(size*int64(time.Millisecond)/rate), time.Duration(size*int64(time.Millisecond)/rate)*1500/1448)
	if want := time.Second; el < want || el > want+2*slack {
		t.Errorf("%d bytes at %d KB/s took %v; want at least %v", size, rate, el, want)
	}
}

// timeout drops the bytes and closes the connection after that long
// without any.
func TestTimeout(t *testing.T) {
	p := withProxy(t, echoServer(t))
	if _, err := p.AddToxic("", "timeout", "downstream", 1, tpclient.Attributes{"timeout": 200}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Listen)
	start := time.Now()
	c.Write([]byte("lost"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 16))
	if el := time.Since(start); n != 0 || err != io.EOF || el < 200*time.Millisecond {
		t.Errorf("read %d bytes, %v after %v; want none and the end after 200 ms", n, err, el)
	}
}

// reset_peer resets the connection after its timeout: the client sees
// ECONNRESET.
func TestResetPeer(t *testing.T) {
	p := withProxy(t, echoServer(t))
	if _, err := p.AddToxic("", "reset_peer", "upstream", 1, tpclient.Attributes{"timeout": 100}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Listen)
	start := time.Now()
	c.Write([]byte("x"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 16))
	if el := time.Since(start); n != 0 || !errors.Is(err, syscall.ECONNRESET) || el < 100*time.Millisecond {
		t.Errorf("read %d bytes, %v after %v; want a reset after 100 ms", n, err, el)
	}
}

// limit_data passes on so many bytes, then closes: 8 bytes at a limit of
// 5 leave the upstream abcde and an end of stream.
func TestLimitData(t *testing.T) {
	got := make(chan string, 1)
	up := upstream(t, func(c net.Conn) {
		b, _ := io.ReadAll(c)
		got <- string(b)
	})
	p := withProxy(t, up)
	if _, err := p.AddToxic("", "limit_data", "upstream", 1, tpclient.Attributes{"bytes": 5}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Listen)
	c.Write([]byte("abcdefgh"))
	if s := <-got; s != "abcde" {
		t.Errorf("the upstream read %q; want abcde", s)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the client reads %v; want the end", err)
	}
}

// slow_close holds the end of stream: the client sees it 300 ms after the
// upstream's bytes.
func TestSlowClose(t *testing.T) {
	up := upstream(t, func(c net.Conn) { c.Write([]byte("bye")) })
	p := withProxy(t, up)
	if _, err := p.AddToxic("", "slow_close", "downstream", 1, tpclient.Attributes{"delay": 300}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Listen)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 3)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "bye" {
		t.Fatalf("read %q, %v", b, err)
	}
	start := time.Now()
	_, err := c.Read(b)
	if el := time.Since(start); err != io.EOF || el < 250*time.Millisecond {
		t.Errorf("the end came after %v (%v); want about 300 ms after the bytes", el, err)
	}
}

// slicer writes its pieces one by one, each followed by its delay: 100
// bytes in pieces of 10 every 20 ms take 180 ms at least, intact.
func TestSlicer(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 10)
	up := upstream(t, func(c net.Conn) { c.Write(data) })
	p := withProxy(t, up)
	if _, err := p.AddToxic("", "slicer", "downstream", 1, tpclient.Attributes{"average_size": 10, "size_variation": 0, "delay": 20000}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Listen)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	first := make([]byte, 1)
	if _, err := io.ReadFull(c, first); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rest, err := io.ReadAll(c)
	if el := time.Since(start); err != nil || !bytes.Equal(append(first, rest...), data) || el < 160*time.Millisecond {
		t.Errorf("read %d bytes (%v) over %v; want all 100 over 180 ms", 1+len(rest), err, el)
	}
}

// Toxics reach connections already open: a limit_data added to an open
// connection closes it; a bandwidth of 0 holds its bytes until removed.
func TestToxicsOnOpenConnections(t *testing.T) {
	p := withProxy(t, echoServer(t))
	c := dial(t, p.Listen)
	roundTrip(t, c, "before")
	if _, err := p.AddToxic("hold", "bandwidth", "downstream", 1, tpclient.Attributes{"rate": 0}); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("held"))
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := c.Read(make([]byte, 4)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("with a bandwidth of 0, read %d bytes, %v; want nothing", n, err)
	}
	if err := p.RemoveToxic("hold"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "held" {
		t.Fatalf("once removed: %q, %v; want the bytes held", b, err)
	}
	if _, err := p.AddToxic("", "limit_data", "downstream", 1, tpclient.Attributes{"bytes": 2}); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("abcd"))
	got, err := io.ReadAll(c)
	if string(got) != "ab" || err != nil {
		t.Errorf("after limit_data 2: %q, %v; want ab and the end", got, err)
	}
}

// A latency toxic reaches a connection already open, as toxiproxy's
// do: its link takes the new delay from the next packet on
// (emu.Net.SetLink), and gives it back when the toxic goes.
func TestLatencyOnAnOpenConnection(t *testing.T) {
	// Long enough that an echo without it stays under it on a busy
	// machine.
	const latency = 400 * time.Millisecond
	p := withProxy(t, echoServer(t))
	c := dial(t, p.Listen)
	if rtt := roundTrip(t, c, "before"); rtt >= latency {
		t.Fatalf("before the toxic, an echo took %v; want less than %v", rtt, latency)
	}
	if _, err := p.AddToxic("slow", "latency", "downstream", 1, tpclient.Attributes{"latency": latency.Milliseconds()}); err != nil {
		t.Fatal(err)
	}
	if rtt := roundTrip(t, c, "during"); rtt < latency || rtt > latency+slack {
		t.Errorf("with the toxic, an echo on the open connection took %v; want at least %v", rtt, latency)
	}
	if err := p.RemoveToxic("slow"); err != nil {
		t.Fatal(err)
	}
	if rtt := roundTrip(t, c, "after"); rtt >= latency {
		t.Errorf("after the toxic went, an echo took %v; want less than %v", rtt, latency)
	}
}

// Toxicity 0 never applies: a limit_data of 0 bytes, which would close
// every connection at its first byte, leaves ten connections alone.
func TestToxicityZero(t *testing.T) {
	p := withProxy(t, echoServer(t))
	if _, err := p.AddToxic("", "limit_data", "downstream", 0, tpclient.Attributes{"bytes": 0}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		c := dial(t, p.Listen)
		roundTrip(t, c, "fine")
		c.Close()
	}
}
