package emu

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"go.uber.org/goleak"
)

// traceRun uploads payload from the client to the server, which answers
// with one byte once it has read it all, and returns the run's trace hash
// with the link's counters.
func traceRun(t *testing.T, cfg Config, payload []byte) Stats {
	t.Helper()
	n := newNet(t, cfg)
	err := n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Listen(9)
		if err != nil {
			return err
		}
		defer ln.Close()
		served := make(chan error, 1)
		n.Go(func() {
			c, err := ln.Accept()
			if err != nil {
				served <- err
				return
			}
			defer c.Close()
			got, err := io.ReadAll(c)
			if err != nil {
				served <- err
				return
			}
			if !bytes.Equal(got, payload) {
				served <- fmt.Errorf("server read %d bytes that differ from the %d sent", len(got), len(payload))
				return
			}
			_, err = c.Write([]byte{1})
			served <- err
		})
		c, err := n.Dial(ctx, 9)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write(payload); err != nil {
			return err
		}
		if err := c.CloseWrite(); err != nil {
			return err
		}
		reply, err := io.ReadAll(c)
		if err != nil {
			return err
		}
		if len(reply) != 1 {
			return fmt.Errorf("client read a %d-byte reply; want 1 byte", len(reply))
		}
		return <-served
	})
	if err != nil {
		t.Fatal(err)
	}
	st := n.Stats()
	n.Close()
	return st
}

// TestTraceHashTellsRunsApart is the positive control of the trace hash:
// on the virtual clock a different seed, a link delay longer by 1 ns or
// one different byte of payload changes it, while a repeat of the same
// configuration gives the same hash.
func TestTraceHashTellsRunsApart(t *testing.T) {
	defer goleak.VerifyNone(t)
	base := Config{Link: link.Config{Delay: 10 * time.Millisecond, Rate: 20e6, DelayedACK: link.LinuxDelayedACK}, Seed: 1}
	payload := make([]byte, 32<<10)
	for i := range payload {
		payload[i] = byte(i * 7 / 3)
	}
	want := traceRun(t, base, payload)

	again := traceRun(t, base, payload)
	if again.TraceSHA256 != want.TraceSHA256 {
		t.Fatalf("the same configuration run twice gave trace %s, then %s; want the same hash", want.TraceSHA256, again.TraceSHA256)
	}

	seed := base
	seed.Seed = 2
	delay := base
	delay.Link.Delay += time.Nanosecond
	flipped := bytes.Clone(payload)
	flipped[len(flipped)/2] ^= 0x01
	for _, c := range []struct {
		name    string
		cfg     Config
		payload []byte
	}{
		{"seed 2 instead of 1", seed, payload},
		{"delay 10ms+1ns instead of 10ms", delay, payload},
		{"one payload byte flipped", base, flipped},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := traceRun(t, c.cfg, c.payload)
			t.Logf("trace %.16s, %d packets delivered (base: %.16s, %d packets)",
				got.TraceSHA256, got.Link[link.AtoB].Packets+got.Link[link.BtoA].Packets,
				want.TraceSHA256, want.Link[link.AtoB].Packets+want.Link[link.BtoA].Packets)
			if got.TraceSHA256 == want.TraceSHA256 {
				t.Errorf("trace hash %s equals the base run's; want a different hash", got.TraceSHA256)
			}
		})
	}
}
