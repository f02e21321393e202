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

const want = `20 sequential GETs at 100ms RTT
                                            per request  round trips  conns
fresh connection per request                      200ms          2.0     20
pooled (keep-alive)                               105ms          1.1      1
pooled, 500ms pauses, 300ms idle timeout          200ms          2.0     20
`
