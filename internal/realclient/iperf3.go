// Package realclient runs programs netemu does not contain (iperf3,
// headless Chromium) for the tests that claim to serve them: it starts
// them, waits for them to be ready and reads what they measured, curl's
// times too. A test
// that needs one skips, naming the package to install, where it is
// missing; .ci/run installs them all.
package realclient

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Iperf3 returns iperf3's path, or skips the test.
func Iperf3(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath("iperf3")
	if err != nil {
		tb.Skip("iperf3 is not installed (apt-get install iperf3; .ci/run installs it)")
	}
	return path
}

// Iperf3Server starts an iperf3 server on a free port of 127.0.0.1 and
// returns its address once it listens; the test's cleanup ends it.
func Iperf3Server(tb testing.TB) string {
	tb.Helper()
	iperf3 := Iperf3(tb)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ln.Close() // iperf3 takes the port over
	srv := exec.Command(iperf3, "-s", "--forceflush", "-B", "127.0.0.1", "-p", port)
	out, err := srv.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		tb.Fatal(err)
	}
	drained := make(chan struct{})
	tb.Cleanup(func() {
		srv.Process.Kill() // the server this test started
		<-drained
		srv.Wait()
	})
	// It prints "Server listening on PORT" once it listens; the rest of
	// its output is read and dropped so that it never blocks on a pipe.
	listening := make(chan bool, 1)
	go func() {
		defer close(drained)
		lines := bufio.NewScanner(out)
		said := false
		for lines.Scan() {
			if !said && strings.Contains(lines.Text(), "Server listening") {
				said = true
				listening <- true
			}
		}
		if !said {
			listening <- false
		}
	}()
	select {
	case ok := <-listening:
		if !ok {
			tb.Fatalf("iperf3 -s -p %s ended before it listened", port)
		}
	case <-time.After(10 * time.Second):
		tb.Fatalf("iperf3 -s -p %s did not say it listened in 10 s", port)
	}
	return addr
}

// Iperf3Received runs an iperf3 client with the arguments given (-J is
// added) and returns the rate the receiving end measured over the test,
// in bits per second.
func Iperf3Received(tb testing.TB, args ...string) float64 {
	tb.Helper()
	// A run takes its -t and a second or two; a minute only catches a
	// client that hangs.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Iperf3(tb), append(args, "-J")...)
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s: %v (output %q)", strings.Join(cmd.Args, " "), err, out)
	}
	bps, err := ParseIperf3(out)
	if err != nil {
		tb.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return bps
}

// ParseIperf3 reads the output of iperf3 -J and returns the rate the
// receiving end measured, in bits per second.
func ParseIperf3(out []byte) (float64, error) {
	var res struct {
		Error string
		End   struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		}
	}
	switch err := json.Unmarshal(out, &res); {
	case err != nil:
		return 0, fmt.Errorf("iperf3 wrote no JSON (%v): %q", err, out)
	case res.Error != "":
		return 0, fmt.Errorf("iperf3: %s", res.Error)
	case res.End.SumReceived.BitsPerSecond <= 0:
		return 0, fmt.Errorf("iperf3 measured no rate: %q", out)
	}
	return res.End.SumReceived.BitsPerSecond, nil
}

// Iperf3Bounds says why got, a rate iperf3's receiving end measured
// across a link of the given rate, breaks what the link guarantees on a
// machine however loaded; nil if it does not. The link's rate counts IP
// bytes and iperf3 counts payload, so a receiver can never measure more
// than the rate (a full link shows as 1448/1500 of it, with TCP
// timestamps). There is no lower bound beyond a rate above zero
// (ParseIperf3 refuses none): the emulated stacks and the link's clock
// need CPU time, and at load 11 under the race detector a proxy's
// upload measured 2.2 Mbit/s of 10. How close a run comes to the full
// link is a measurement (the Iperf3 benchmarks of proxy and cmd/netemu),
// not a test.
func Iperf3Bounds(got, rate float64) error {
	if got > rate {
		return fmt.Errorf("iperf3 received %.3f Mbit/s, above the link's %.3g Mbit/s: the link carries at most its rate (a full link shows as %.3f)",
			got/1e6, rate/1e6, Iperf3Full(rate)/1e6)
	}
	return nil
}

// Iperf3Full is the payload rate iperf3 measures on a full link of the
// given rate: 1448 payload bytes in each 1500-byte packet (TCP
// timestamps on).
func Iperf3Full(rate float64) float64 { return rate * 1448 / 1500 }
