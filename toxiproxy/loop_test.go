package toxiproxy_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	tpclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/netemu/netemu/internal/soak"
	"github.com/netemu/netemu/toxiproxy"
)

// refuses checks that nothing listens on addr.
func refuses(t *testing.T, addr string) {
	t.Helper()
	if c, err := net.Dial("tcp4", addr); err == nil {
		c.Close()
		t.Errorf("%s accepts connections; want nothing listening there", addr)
	}
}

// A proxy whose upstream leads back to it, itself or through others, is
// refused when it is created, populated, updated or enabled, with
// nothing left listening.
func TestLoopRefused(t *testing.T) {
	s, cl, log := serve(t, toxiproxy.Config{})
	a := soak.FreeAddr(t)
	_, port, _ := net.SplitHostPort(a)
	for _, up := range []string{a, "localhost:" + port, "0.0.0.0:" + port} {
		code, _, body := raw(t, s, "POST", "/proxies", `{"name":"self","listen":"`+a+`","upstream":"`+up+`"}`)
		want := `{"error":"proxy self's upstream ` + up + ` is its own listen address: a loop","status":400}` + "\n"
		if code != 400 || body != want {
			t.Errorf("a proxy to itself through %s: %d %s; want 400 %s", up, code, body, want)
		}
		refuses(t, a)
	}
	// Two proxies: b's upstream is a's listen address, and a's is b's.
	b, err := cl.CreateProxy("b", "127.0.0.1:0", a)
	if err != nil {
		t.Fatal(err)
	}
	code, _, body := raw(t, s, "POST", "/proxies", `{"name":"a","listen":"`+a+`","upstream":"`+b.Listen+`"}`)
	if want := `{"error":"proxy a's upstream ` + b.Listen + ` is proxy b's listen address, whose upstream is proxy a's: a loop","status":400}` + "\n"; code != 400 || body != want {
		t.Errorf("a two-proxy loop: %d %s; want 400 %s", code, body, want)
	}
	refuses(t, a)
	// Three, through /populate; the proxies before the loop are made.
	c := soak.FreeAddr(t)
	code, _, body = raw(t, s, "POST", "/populate", `[{"name":"c","listen":"`+c+`","upstream":"`+b.Listen+`"},{"name":"a","listen":"`+a+`","upstream":"`+c+`"}]`)
	if code != 400 || !strings.Contains(body, "proxy a's upstream "+c+" is proxy c's listen address, whose upstream is proxy b's, whose upstream is proxy a's: a loop") {
		t.Errorf("a three-proxy loop: %d %s", code, body)
	}
	refuses(t, a)
	// An update that would close a loop changes nothing: b still serves.
	echo := echoServer(t)
	e, err := cl.CreateProxy("e", "127.0.0.1:0", echo)
	if err != nil {
		t.Fatal(err)
	}
	e.Upstream = e.Listen
	if err := e.Save(); err == nil || !strings.Contains(err.Error(), "HTTP 400: proxy e's upstream "+e.Listen+" is its own listen address: a loop") {
		t.Errorf("update to itself: %v", err)
	}
	if got, err := cl.Proxy("e"); err != nil || got.Upstream != echo || !got.Enabled {
		t.Errorf("after the refused update: %+v, %v; want it unchanged", got, err)
	}
	roundTrip(t, dial(t, e.Listen), "still there")
	// A disabled proxy in a loop: refused when enabled.
	d, err := cl.CreateProxy("d", "127.0.0.1:0", echo)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Disable(); err != nil {
		t.Fatal(err)
	}
	d.Upstream = d.Listen
	d.Enabled = false
	if err := d.Save(); err != nil {
		t.Fatalf("a disabled proxy to itself: %v; want it kept (nothing listens)", err)
	}
	if err := d.Enable(); err == nil || !strings.Contains(err.Error(), "is its own listen address: a loop") {
		t.Errorf("enable a proxy to itself: %v", err)
	}
	refuses(t, d.Listen)
	for _, l := range log.take() {
		if strings.Contains(l, "loop") && len(l) > 300 {
			t.Errorf("log line of %d bytes: %.100s…", len(l), l)
		}
	}
}

// openFDs counts the process's open descriptors; -1 where that cannot
// be read.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// A loop that shows only at connect time (a name that leads to the
// proxy itself) ends at its first turn: the client's connection ends,
// descriptors and connections do not grow, the log names the loop.
func TestLoopCutAtConnect(t *testing.T) {
	var self atomic.Value
	redirect := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == "itself.test:1" {
			addr = self.Load().(string)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	_, cl, log := serve(t, toxiproxy.Config{DialUpstream: redirect})
	p, err := cl.CreateProxy("loop", "127.0.0.1:0", "itself.test:1")
	if err != nil {
		t.Fatal(err)
	}
	self.Store(p.Listen)
	before := openFDs()
	for i := 0; i < 5; i++ {
		c, err := net.Dial("tcp4", p.Listen)
		if errors.Is(err, syscall.ECONNRESET) {
			continue // ended so soon that the connect saw the reset: as wanted
		}
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("hello"))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
			t.Fatalf("a client of a proxy that leads to itself: read %d, %v; want its connection ended", n, err)
		}
		c.Close()
	}
	time.Sleep(300 * time.Millisecond) // what a loop would grow in
	if after := openFDs(); before >= 0 && after > before+20 {
		t.Errorf("%d descriptors open, %d before; want no growth", after, before)
	}
	loops := 0
	for _, l := range log.take() {
		if strings.Contains(l, "a loop") {
			loops++
		}
	}
	if loops == 0 || loops > 10 {
		t.Errorf("%d log lines name the loop; want one or two for each of 5 clients", loops)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

var _ = tpclient.NewClient
