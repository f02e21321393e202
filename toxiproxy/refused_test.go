package toxiproxy_test

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/toxiproxy"
)

// A proxy whose upstream refuses closes each client's connection
// normally, as toxiproxy does: a client that dials before its upstream
// is up sees its connect succeed and then the end of the stream, never a
// reset, which a loaded machine can deliver before connect() returns
// (6 to 41 of 200 dials failed there when the proxy reset them).
func TestRefusedUpstreamCloses(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, client, _ := serve(t, toxiproxy.Config{})
	px, err := client.CreateProxy("nothing", "127.0.0.1:0", closed)
	if err != nil {
		t.Fatal(err)
	}
	dials := 1000
	if testing.Short() {
		dials = 100
	}
	deadline := time.Now().Add(2 * time.Minute)
	resets, other := 0, 0
	var first error
	for i := 0; i < dials && time.Now().Before(deadline); i++ {
		c, err := net.Dial("tcp4", px.Listen)
		if err == nil {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, err = c.Read(make([]byte, 1))
			c.Close()
			if errors.Is(err, io.EOF) {
				continue
			}
		}
		if errors.Is(err, syscall.ECONNRESET) {
			resets++
		} else {
			other++
		}
		if first == nil {
			first = err
		}
	}
	if resets+other > 0 {
		t.Errorf("%d of %d dials were reset and %d ended otherwise (first: %v); want every one closed normally", resets, dials, other, first)
	}
}
