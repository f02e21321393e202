package toxiproxy_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	tpclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/netemu/netemu/toxiproxy"
)

// openConns opens n connections through p and waits until each carries
// bytes: each has its network and its toxics.
func openConns(t testing.TB, p *tpclient.Proxy, n int) []net.Conn {
	t.Helper()
	var out []net.Conn
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp4", p.Listen)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if tt, ok := t.(*testing.T); ok {
			roundTrip(tt, c, "x")
		} else {
			c.Write([]byte("x"))
			c.Read(make([]byte, 1))
		}
		out = append(out, c)
	}
	return out
}

// Adding a toxic costs one step per open connection, whatever the number
// of toxics: each connection adds the new one to those it has, rather
// than applying them all again. A removal applies them all.
func TestAddToxicCost(t *testing.T) {
	s, cl, _ := serve(t, toxiproxy.Config{})
	p, err := cl.CreateProxy("many", "127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	const conns, toxics = 6, 40
	cs := openConns(t, p, conns)
	for i := 0; i < toxics; i++ {
		typ, attrs := "noop", tpclient.Attributes(nil)
		if i%4 == 0 {
			typ, attrs = "latency", tpclient.Attributes{"latency": 0}
		}
		if _, err := p.AddToxic(fmt.Sprint("t", i), typ, "", 1, attrs); err != nil {
			t.Fatal(err)
		}
	}
	for _, typ := range []string{"noop", "latency"} {
		before := toxiproxy.Reapplied(s)
		if _, err := p.AddToxic("last_"+typ, typ, "upstream", 1, tpclient.Attributes{}); err != nil {
			t.Fatal(err)
		}
		if got := toxiproxy.Reapplied(s) - before; got != conns {
			t.Errorf("adding a %s toxic to %d toxics on %d connections applied %d toxics; want %d, one per connection", typ, toxics, conns, got, conns)
		}
	}
	before := toxiproxy.Reapplied(s)
	if err := p.RemoveToxic("t1"); err != nil {
		t.Fatal(err)
	}
	if got, want := toxiproxy.Reapplied(s)-before, uint64(conns*(toxics+1)); got != want {
		t.Errorf("removing a toxic applied %d toxics; want %d, every toxic left on every connection", got, want)
	}
	for i, c := range cs {
		roundTrip(t, c, fmt.Sprint("still ", i))
	}
}

// BenchmarkAddToxic adds toxics to a proxy with open connections and
// many toxics: the cost per add, and the toxics applied per add.
func BenchmarkAddToxic(b *testing.B) {
	s, err := toxiproxy.New(toxiproxy.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	cl := tpclient.NewClient(s.Addr().String())
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); c.Read(make([]byte, 1)); c.Write([]byte("x")); c.Read(make([]byte, 1)) }()
		}
	}()
	p, err := cl.CreateProxy("bench", "127.0.0.1:0", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	const conns, toxics = 50, 1000
	openConns(b, p, conns)
	for i := 0; i < toxics; i++ {
		if _, err := p.AddToxic(fmt.Sprint("pre", i), "noop", "", 1, nil); err != nil {
			b.Fatal(err)
		}
	}
	before := toxiproxy.Reapplied(s)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.AddToxic(fmt.Sprint("b", i), "noop", "", 1, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(toxiproxy.Reapplied(s)-before)/float64(b.N), "toxics-applied/op")
}

// A value refused comes back, and goes to the log, as its first bytes
// and its length, never whole.
func TestLongValueClipped(t *testing.T) {
	s, _, log := serve(t, toxiproxy.Config{})
	if code, _, body := raw(t, s, "POST", "/proxies", `{"name":"p","listen":"127.0.0.1:0","upstream":"`+echoServer(t)+`"}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	log.take()
	big := strings.Repeat("x", 1<<20-200)
	nines := strings.Repeat("9", 500_000)
	for _, c := range []struct{ method, path, body, want string }{
		{"POST", "/proxies/p/toxics", `{"type":"netem","attributes":{"options":"` + big + `"}}`, `xxxxxxxx…\" (1048376 bytes) is not a netem option`},
		{"POST", "/proxies/p/toxics", `{"type":"netem","attributes":{"options":"delay ` + nines + `"}}`, `99999999…\" (500000 bytes) has no unit`},
		{"POST", "/proxies/p/toxics", `{"type":"qdisc","attributes":{"options":"` + big + `"}}`, `xxxxxxxx…\" (1048376 bytes) is not one netemu has`},
		{"GET", "/proxies/" + strings.Repeat("n", 100_000), "", "proxy not found"},
	} {
		code, _, body := raw(t, s, c.method, c.path, c.body)
		if code/100 != 4 || len(body) > 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s %.40s…: %d, %d bytes: %.300s; want a 4xx of at most 400 bytes with %q", c.method, c.path, code, len(body), body, c.want)
		}
		for _, l := range log.take() {
			if len(l) > 500 {
				t.Errorf("%s %.40s…: a log line of %d bytes: %.200s…", c.method, c.path, len(l), l)
			}
		}
	}
}
