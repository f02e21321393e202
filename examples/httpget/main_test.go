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

const want = `GET of 100000 bytes at 10 Mbit/s, fresh connection
     RTT    elapsed  round trips
    10ms 103.2984ms         10.3
    50ms   249.98ms          5.0
   100ms   449.98ms          4.5
   200ms   849.98ms          4.2
`
