// Command timeout shows faults ending at exact instants of the run: the
// link drops every packet from 1 s to 4 s and again from 10 s on. A Dial
// and a read give up at their deadlines; a transfer waits out the first
// outage and completes; a Dial without a deadline ends when the stack
// gives up retrying, with ETIMEDOUT, instead of hanging.
//
//	go run ./examples/timeout
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/emutest"
	"github.com/netemu/netemu/link"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "timeout:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	n, err := emu.New(emu.Config{Link: link.Config{
		Delay:   10 * time.Millisecond,
		Rate:    10e6,
		Outages: []link.Outage{{Start: time.Second, End: 4 * time.Second}, {Start: 10 * time.Second, End: time.Hour}},
	}})
	if err != nil {
		return err
	}
	defer n.Close()
	// The virtual clock starts at clock.Epoch, and so do the outages.
	at := func() time.Duration { return n.Now().Sub(clock.Epoch) }
	// Lines are printed after the run: a goroutine blocked in a system
	// call (a write to a terminal or pipe) does not hold virtual time back.
	var out bytes.Buffer
	say := func(format string, args ...any) { fmt.Fprintf(&out, "%9v  %s\n", at(), fmt.Sprintf(format, args...)) }

	err = n.Run(context.Background(), func(ctx context.Context) error {
		client, server, err := emutest.Pipe(ctx, n, 9)
		if err != nil {
			return err
		}
		defer client.Close()
		say("connected; the link is down from 1s to 4s and from 10s on")

		// The server answers a request with 500 KB, once it arrives.
		sent := make(chan error, 1)
		n.Go(func() {
			defer server.Close()
			if _, err := io.ReadFull(server, make([]byte, 4)); err != nil {
				sent <- err
				return
			}
			_, err := server.Write(make([]byte, 500_000))
			sent <- err
		})

		n.Sleep(ctx, 1500*time.Millisecond-at())
		dctx, cancel := emutest.WithTimeout(ctx, n.Clock(), 500*time.Millisecond)
		_, err = n.Dial(dctx, 9)
		cancel()
		say("Dial with a 500ms timeout: %v (deadline exceeded: %v)", err, errors.Is(err, context.DeadlineExceeded))

		client.Write([]byte("ping"))
		client.SetReadDeadline(n.Now().Add(250 * time.Millisecond))
		_, err = client.Read(make([]byte, 1))
		say("Read with a 250ms deadline: %v", err)

		client.SetReadDeadline(time.Time{})
		got, err := io.Copy(io.Discard, client)
		if err != nil {
			return err
		}
		if err := <-sent; err != nil {
			return err
		}
		say("received %d bytes: the request was retransmitted once the link came back", got)

		n.Sleep(ctx, 10*time.Second-at())
		start := n.Now()
		_, err = n.Dial(ctx, 9)
		say("Dial without a deadline, link down: %v after %v (ETIMEDOUT: %v)", err, n.Now().Sub(start), errors.Is(err, syscall.ETIMEDOUT))
		return nil
	})
	// Read the counters before anything else: the network runs on until
	// Close, and virtual time moves whenever the process is idle.
	st := n.Stats().Link
	w.Write(out.Bytes())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "packets dropped by the outages: %d client to server, %d server to client\n",
		st[link.AtoB].Drops[link.DropOutage], st[link.BtoA].Drops[link.DropOutage])
	return nil
}
