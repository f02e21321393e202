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

const want = `30.1376ms  connected; the link is down from 1s to 4s and from 10s on
       2s  Dial with a 500ms timeout: dial tcp 198.18.0.2:9: context deadline exceeded (deadline exceeded: true)
    2.25s  Read with a 250ms deadline: read tcp 198.18.0.1:50435->198.18.0.2:9: i/o timeout
6.127944571s  received 500000 bytes: the request was retransmitted once the link came back
2m24.308222971s  Dial without a deadline, link down: dial tcp 198.18.0.2:9: connection timed out after 2m14.308222971s (ETIMEDOUT: true)
packets dropped by the outages: 18 client to server, 0 server to client
`
