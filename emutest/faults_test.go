package emutest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
)

// Each fault below ends with a clear error at an exact instant of the
// run; New's cleanup fails the test if a goroutine is left behind.

// A server with an idle timeout closes a kept-alive connection exactly
// IdleTimeout after its last response: the client reads EOF half a round
// trip later, when the FIN arrives.
func TestIdleTimeoutClosesConnection(t *testing.T) {
	n := New(t, RTT(100*time.Millisecond))
	srv := &Server{Handler: text("hello"), IdleTimeout: 5 * time.Second}
	if err := srv.Start(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	n.Run(func(ctx context.Context) {
		start := n.Now()
		c, err := n.Dial(ctx, 80)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: server\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "hello" {
			t.Fatalf("body %q", b)
		}
		// The request reached the server at 150ms, its response left at
		// once and the connection went idle.
		_, err = c.Read(make([]byte, 1))
		if err != io.EOF {
			t.Errorf("Read on the idle connection: %v; want io.EOF", err)
		}
		if got, want := n.Now().Sub(start), 150*time.Millisecond+5*time.Second+50*time.Millisecond; got != want {
			t.Errorf("server closed the connection at %v; want %v (idle at 150ms + 5s, FIN 50ms)", got, want)
		}
	})
}

// An HTTP client whose pooled connection the server closed for idleness
// opens a new one, paying the handshake again; within the timeout it
// reuses the connection.
func TestIdleTimeoutHTTPClientReconnects(t *testing.T) {
	for _, c := range []struct {
		pause     time.Duration
		conns     int
		secondGET time.Duration
	}{
		{4 * time.Second, 1, 100 * time.Millisecond},
		{6 * time.Second, 2, 200 * time.Millisecond},
	} {
		n := New(t, RTT(100*time.Millisecond))
		srv := &Server{Handler: text("hello"), IdleTimeout: 5 * time.Second}
		if err := srv.Start(n); err != nil {
			t.Fatal(err)
		}
		client := n.HTTPClient()
		n.Run(func(ctx context.Context) {
			body(t, client, "http://server/")
			n.Sleep(ctx, c.pause)
			start := n.Now()
			if got := body(t, client, "http://server/"); got != "hello" {
				t.Errorf("second GET: %q", got)
			}
			if d := n.Now().Sub(start); d != c.secondGET {
				t.Errorf("pause %v: second GET took %v; want %v", c.pause, d, c.secondGET)
			}
		})
		if srv.Conns() != c.conns {
			t.Errorf("pause %v: %d connections; want %d", c.pause, srv.Conns(), c.conns)
		}
		srv.Close()
	}
}

// Without a clock to set timers on (an emu.Env that offers none), the idle
// timeout sleeps on the env and closes at the same instant.
func TestIdleTimeoutWithoutClock(t *testing.T) {
	n := New(t, RTT(100*time.Millisecond))
	env := struct{ emu.Env }{n} // hides Clock
	srv := &Server{Handler: text("hello"), IdleTimeout: time.Second}
	if err := srv.Start(env); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	n.Run(func(ctx context.Context) {
		start := n.Now()
		c, err := n.Dial(ctx, 80)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: server\r\n\r\n")
		if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, c)
		if got, want := n.Now().Sub(start), 150*time.Millisecond+time.Second+50*time.Millisecond; got != want {
			t.Errorf("closed at %v; want %v", got, want)
		}
	})
}

// A peer that closes with unread data resets the connection: the
// client's Read fails with ECONNRESET exactly when the RST arrives.
func TestClientSeesReset(t *testing.T) {
	n := New(t, RTT(20*time.Millisecond))
	n.Run(func(ctx context.Context) {
		client, server := n.Pipe(ctx, 0)
		start := n.Now()
		io.WriteString(client, "request")
		// The server reads 1 byte when the data arrives (10ms) and closes
		// with 6 unread: a RST, which reaches the client at 20ms.
		if _, err := server.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		server.Close()
		_, err := client.Read(make([]byte, 1))
		if !errors.Is(err, syscall.ECONNRESET) || !strings.Contains(err.Error(), "connection reset by peer") {
			t.Errorf("Read after the reset: %v; want ECONNRESET", err)
		}
		if d := n.Now().Sub(start); d != 20*time.Millisecond {
			t.Errorf("reset seen after %v; want 20ms", d)
		}
		// Later calls fail at once with a closed-connection error.
		if _, err := client.Write([]byte("x")); err == nil {
			t.Errorf("Write after the reset succeeded")
		}
	})
}

// A server that resets the connection instead of answering: the HTTP
// client's GET fails with ECONNRESET when the RST arrives, rather than
// hanging or retrying.
func TestHTTPClientSeesReset(t *testing.T) {
	n := New(t, RTT(20*time.Millisecond))
	ln, err := n.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Read(make([]byte, 1))
		c.Close() // the rest of the request is unread: a RST
	}()
	client := n.HTTPClient()
	n.Run(func(ctx context.Context) {
		start := n.Now()
		_, err := client.Get("http://server/")
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("GET from a server that reset: %v; want ECONNRESET", err)
		}
		// Handshake (20ms), request (10ms), RST back (10ms).
		if d := n.Now().Sub(start); d != 40*time.Millisecond {
			t.Errorf("GET failed after %v; want 40ms", d)
		}
	})
	<-served
}

// During an outage a Dial with a context deadline fails exactly at the
// deadline; without one the stack gives up after its SYN retries (1 + 2 +
// 4 + ... + 64 s) with ETIMEDOUT. Both end; neither hangs.
func TestOutageDial(t *testing.T) {
	n := New(t, RTT(20*time.Millisecond), Outage(0, time.Hour))
	n.Run(func(ctx context.Context) {
		start := n.Now()
		dctx, cancel := n.WithTimeout(ctx, 2500*time.Millisecond)
		defer cancel()
		_, err := n.Dial(dctx, 80)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Dial during an outage, 2.5s timeout: %v; want context.DeadlineExceeded", err)
		}
		if d := n.Now().Sub(start); d != 2500*time.Millisecond {
			t.Errorf("Dial gave up after %v; want exactly 2.5s", d)
		}

		start = n.Now()
		_, err = n.Dial(ctx, 80)
		if !errors.Is(err, syscall.ETIMEDOUT) || !strings.Contains(err.Error(), "connection timed out") || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Dial during an outage, no deadline: %v; want ETIMEDOUT", err)
		}
		// Linux 6.18's SYN retries: 0, 1, 2, 3, 4, 5, 7, 11, 19, 35 and
		// 67 s, give-up 64 s after the last, each timeout rounded up by
		// the timer wheel (package tcp's TestSynRetransmitSchedule).
		if d, want := n.Now().Sub(start), 133616222971*time.Nanosecond; d != want {
			t.Errorf("Dial gave up after %v; want %v (SYN retries)", d, want)
		}
	})
	st := n.Stats().Link[link.AtoB]
	if st.Drops[link.DropOutage] == 0 || st.Drops[link.DropOutage] != st.SentPackets || st.Packets != 0 {
		t.Errorf("a>b: sent %d, delivered %d, drops %v; want every packet dropped by the outage", st.SentPackets, st.Packets, st.Drops)
	}
}

// A connection whose link goes down: a read deadline fires exactly on
// time; without one the stack gives up retransmitting with ETIMEDOUT.
func TestOutageRead(t *testing.T) {
	n := New(t, RTT(20*time.Millisecond), Outage(time.Second, 24*time.Hour))
	n.Run(func(ctx context.Context) {
		client, _ := n.Pipe(ctx, 0)
		n.Sleep(ctx, 2*time.Second) // into the outage
		start := n.Now()
		io.WriteString(client, "are you there?")
		client.SetReadDeadline(n.Now().Add(500 * time.Millisecond))
		_, err := client.Read(make([]byte, 1))
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Read with a deadline during an outage: %v; want os.ErrDeadlineExceeded", err)
		}
		if d := n.Now().Sub(start); d != 500*time.Millisecond {
			t.Errorf("deadline fired after %v; want exactly 500ms", d)
		}

		client.SetReadDeadline(time.Time{})
		_, err = client.Read(make([]byte, 1))
		if !errors.Is(err, syscall.ETIMEDOUT) || !strings.Contains(err.Error(), "connection timed out") {
			t.Errorf("Read during an outage, no deadline: %v; want ETIMEDOUT", err)
		}
		// gVisor retries 15 times, the timeout doubling up to 2 min.
		if d := n.Now().Sub(start); d < 10*time.Minute || d > time.Hour {
			t.Errorf("the stack gave up after %v; want between 10 min and an hour", d)
		}
		t.Logf("gave up after %v", n.Now().Sub(start))
	})
	if d := n.Stats().Link[link.AtoB].Drops[link.DropOutage]; d < 10 {
		t.Errorf("%d packets dropped by the outage; want every retransmission", d)
	}
}

// A transfer that meets a 2-second outage resumes when the link returns
// and delivers every byte intact.
func TestOutageTransferRecovers(t *testing.T) {
	n := New(t, RTT(20*time.Millisecond), Rate(10e6), Outage(500*time.Millisecond, 2500*time.Millisecond))
	data := make([]byte, 2<<20) // 1.7s at 10 Mbit/s
	for i := range data {
		data[i] = byte(i * 31 / 7)
	}
	n.Run(func(ctx context.Context) {
		client, server := n.Pipe(ctx, 0)
		start := n.Now()
		done := make(chan error, 1)
		n.Go(func() {
			_, err := server.Write(data)
			server.Close()
			done <- err
		})
		got, err := io.ReadAll(client)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %d of %d bytes, equal %v, %v", len(got), len(data), bytes.Equal(got, data), err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := n.Now().Sub(start); d < 2500*time.Millisecond {
			t.Errorf("transfer took %v; want it to wait out the outage (ends at 2.5s)", d)
		}
		t.Logf("2 MiB across a 2s outage: %v", n.Now().Sub(start))
	})
	if d := n.Stats().Link[link.BtoA].Drops[link.DropOutage]; d == 0 {
		t.Errorf("no packet dropped by the outage")
	}
}

// Canceling a request's context mid-transfer ends the body read exactly
// then, with context.Canceled; the server's handler stops writing.
func TestCancelMidTransfer(t *testing.T) {
	n := New(t, RTT(20*time.Millisecond), Rate(10e6))
	handlerErr := make(chan error, 1)
	n.HTTPServer(80, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for range 160 { // 10 MiB: 8.4s at 10 Mbit/s
			if _, err := w.Write(chunk); err != nil {
				handlerErr <- err
				return
			}
		}
		handlerErr <- nil
	}))
	client := n.HTTPClient()
	n.Run(func(ctx context.Context) {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		start := n.Now()
		n.Clock().AfterFunc(time.Second, cancel)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, "http://server/", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		read, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("body read after cancel: %v; want context.Canceled", err)
		}
		if d := n.Now().Sub(start); d != time.Second {
			t.Errorf("read ended after %v; want exactly 1s", d)
		}
		if read == 0 || read >= 10<<20 {
			t.Errorf("read %d bytes before the cancel; want part of the body", read)
		}
		if err := <-handlerErr; err == nil {
			t.Errorf("the handler wrote the whole body to a canceled request")
		}
	})
}
