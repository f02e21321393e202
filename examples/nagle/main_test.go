package main

import (
	"bytes"
	"testing"

	"go.uber.org/goleak"
)

// The program prints the same figures on every run: the virtual clock
// makes them exact.
func TestOutput(t *testing.T) {
	defer goleak.VerifyNone(t)
	var b bytes.Buffer
	if err := run(&b); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", b.String(), want)
	}
}

const want = `10 write-write-read rounds; the receiver delays ACKs as Linux does (40 ms, on HZ 250's 4 ms ticks)
   RTT client                   median  stalled
    0s nagle, split               44ms     9/10
    0s nagle, coalesced             0s     0/10
    0s nodelay, split               0s     0/10
  20ms nagle, split               84ms     9/10
  20ms nagle, coalesced           20ms     0/10
  20ms nodelay, split             20ms     0/10
`
