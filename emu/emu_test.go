package emu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"go.uber.org/goleak"
)

func newNet(t *testing.T, cfg Config) *Net {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// pingPong runs rounds of a 1-byte request and 1-byte reply and returns
// the time each round took on the run's clock.
func pingPong(ctx context.Context, n *Net, rounds int) ([]time.Duration, error) {
	ln, err := n.Server().Listen(7)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 1)
		for {
			if _, err := io.ReadFull(c, b); err != nil {
				return
			}
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}()
	c, err := n.Client().Dial(ctx, n.Server().AddrPort(7))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []time.Duration
	b := []byte{1}
	for range rounds {
		start := n.Now()
		if _, err := c.Write(b); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return nil, err
		}
		out = append(out, n.Now().Sub(start))
	}
	return out, nil
}

func TestPingPongIsTwoDelays(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := newNet(t, Config{Link: link.Config{Delay: 25 * time.Millisecond}})
	err := n.Run(context.Background(), func(ctx context.Context) error {
		rtts, err := pingPong(ctx, n, 10)
		if err != nil {
			return err
		}
		for i, d := range rtts {
			if d != 50*time.Millisecond {
				t.Errorf("round %d took %v, want exactly 50ms", i, d)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
}

func TestHTTPGetByteExact(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := newNet(t, Config{Link: link.Config{Delay: 10 * time.Millisecond, Rate: 50e6, DelayedACK: link.LinuxDelayedACK}, Seed: 7})
	body := make([]byte, 1<<20)
	for i := range body {
		body[i] = byte(i * 7 / 3)
	}
	err := n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Server().Listen(80)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Date"] = nil
			w.Write(body)
		})}
		go srv.Serve(ln)
		defer srv.Close()
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return n.Client().Dial(ctx, n.Server().AddrPort(80))
		}}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get("http://server/")
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if !bytes.Equal(got, body) {
			return fmt.Errorf("body differs: got %d bytes (sha %x), want %d (sha %x)", len(got), sha256.Sum256(got), len(body), sha256.Sum256(body))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
}
