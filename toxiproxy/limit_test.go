package toxiproxy_test

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/soak"
	"github.com/netemu/netemu/toxiproxy"
)

// At most Config.MaxConns connections are open at once, each with its
// network; the next waits in the listen backlog, unserved, until one
// ends, and is then served.
func TestMaxConnsWaitInTheBacklog(t *testing.T) {
	up, stop, err := soak.EchoServer()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, cl, _ := serve(t, toxiproxy.Config{MaxConns: 2})
	p, err := cl.CreateProxy("limited", "127.0.0.1:0", up)
	if err != nil {
		t.Fatal(err)
	}
	held := []net.Conn{dial(t, p.Listen), dial(t, p.Listen)}
	for _, c := range held {
		roundTrip(t, c, "held")
	}
	third := dial(t, p.Listen) // the kernel completes the handshake: the backlog
	if _, err := third.Write([]byte("wait")); err != nil {
		t.Fatal(err)
	}
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := third.Read(make([]byte, 4)); err == nil {
		t.Fatalf("a third connection was served (%d bytes) while two of MaxConns 2 were open", n)
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(20 * time.Second))
	got := make([]byte, 4)
	if _, err := io.ReadFull(third, got); err != nil || string(got) != "wait" {
		t.Fatalf("once a connection ended, the waiting one read %q, %v; want its echo", got, err)
	}
}

// A negative MaxConns is refused.
func TestMaxConnsNegative(t *testing.T) {
	if _, err := toxiproxy.New(toxiproxy.Config{MaxConns: -1}); err == nil {
		t.Fatal("MaxConns -1 accepted")
	}
}

// A name or an address longer than one can be is refused in one short
// line: a proxy's name and addresses go into every line its connections
// log.
func TestLongNamesRefused(t *testing.T) {
	s, _, log := serve(t, toxiproxy.Config{})
	up := soak.FreeAddr(t)
	big := strings.Repeat("h", 1000000) // the body itself is bounded at 1 MiB
	if code, _, body := raw(t, s, "POST", "/proxies", `{"name":"p","listen":"127.0.0.1:0","upstream":"`+up+`"}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	for _, c := range []struct {
		method, path, body, want string
	}{
		{"POST", "/proxies", `{"name":"` + big + `","upstream":"` + up + `"}`, `{"error":"name is 1000000 bytes: at most 255","status":400}`},
		{"POST", "/proxies", `{"name":"q","upstream":"` + big + `:80"}`, `{"error":"upstream is 1000003 bytes: at most 261","status":400}`},
		{"POST", "/proxies", `{"name":"q","listen":"` + big + `:1","upstream":"` + up + `"}`, `{"error":"listen is 1000002 bytes: at most 261","status":400}`},
		{"POST", "/proxies/p", `{"upstream":"` + big + `:80"}`, `{"error":"upstream is 1000003 bytes: at most 261","status":400}`},
		{"POST", "/populate", `[{"name":"r","upstream":"` + up + `"},{"name":"` + big + `","upstream":"` + up + `"}]`, `{"error":"name is 1000000 bytes at proxy 2: at most 255","status":400,"proxies":null}`},
		{"POST", "/proxies/p/toxics", `{"name":"` + big + `","type":"latency"}`, `{"error":"name is 1000000 bytes: at most 255","status":400}`},
	} {
		code, _, body := raw(t, s, c.method, c.path, c.body)
		if code != 400 || strings.TrimSuffix(body, "\n") != c.want {
			t.Errorf("%s %s with a 1 MB value: %d %.200s; want 400 %s", c.method, c.path, code, body, c.want)
		}
	}
	for _, l := range log.take() {
		if len(l) > 500 {
			t.Errorf("a log line of %d bytes: %.200s…", len(l), l)
		}
	}
}

// An idle proxy holds no slot: with more proxies than MaxConns, each
// still serves.
func TestMaxConnsIdleProxiesHoldNoSlot(t *testing.T) {
	up, stop, err := soak.EchoServer()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, cl, _ := serve(t, toxiproxy.Config{MaxConns: 2})
	var last string
	for _, name := range []string{"a", "b", "c"} {
		p, err := cl.CreateProxy(name, "127.0.0.1:0", up)
		if err != nil {
			t.Fatal(err)
		}
		last = p.Listen
	}
	roundTrip(t, dial(t, last), "third")
}
