package toxiproxy_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tpclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/netemu/netemu/toxiproxy"
	"go.uber.org/goleak"
)

// logLines collects a server's log.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// TestMain checks that the tests leave no goroutine behind: every
// proxy's listener, connection, network and timer ends with the server.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve starts a server on a loopback port of its own, with toxiproxy's
// Go client for it; the test's cleanup closes it.
func serve(t *testing.T, cfg toxiproxy.Config) (*toxiproxy.Server, *tpclient.Client, *logLines) {
	t.Helper()
	log := &logLines{}
	if cfg.Logf == nil {
		cfg.Logf = log.logf
	}
	cfg.Listen = "127.0.0.1:0"
	if cfg.Version == "" {
		cfg.Version = "netemu test"
	}
	s, err := toxiproxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return s, tpclient.NewClient(s.Addr().String()), log
}

// echoServer listens on loopback and echoes every connection.
func echoServer(t *testing.T) string {
	return upstream(t, func(c net.Conn) { io.Copy(c, c) })
}

// upstream listens on loopback and serves each connection with f, which
// the connection's close follows; the test's cleanup stops it.
func upstream(t *testing.T, f func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				f(c)
			}()
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads its echo; it fails the test otherwise.
func roundTrip(t *testing.T, c net.Conn, msg string) time.Duration {
	t.Helper()
	start := time.Now()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, len(msg))
	if _, err := io.ReadFull(c, b); err != nil || string(b) != msg {
		t.Fatalf("echo of %q: %q, %v", msg, b, err)
	}
	c.SetDeadline(time.Time{})
	return time.Since(start)
}

// The client's proxy operations: create (port 0 bound and echoed),
// list, get, disable (refused), enable (the same address again), change
// the upstream, delete; and the version.
func TestProxyLifecycle(t *testing.T) {
	_, cl, _ := serve(t, toxiproxy.Config{Version: "netemu v1.2.3"})
	up := echoServer(t)
	p, err := cl.CreateProxy("echo", "127.0.0.1:0", up)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Listen, "127.0.0.1:") || strings.HasSuffix(p.Listen, ":0") || !p.Enabled || p.Upstream != up {
		t.Fatalf("created %+v; want the port bound, enabled, upstream %s", p, up)
	}
	roundTrip(t, dial(t, p.Listen), "hello")

	all, err := cl.Proxies()
	if err != nil || len(all) != 1 || all["echo"] == nil || all["echo"].Listen != p.Listen {
		t.Fatalf("Proxies: %v, %v; want echo on %s", all, err, p.Listen)
	}
	got, err := cl.Proxy("echo")
	if err != nil || got.Name != "echo" || got.Listen != p.Listen || got.Upstream != up || !got.Enabled || len(got.ActiveToxics) != 0 {
		t.Fatalf("Proxy: %+v, %v", got, err)
	}

	if err := p.Disable(); err != nil || p.Enabled {
		t.Fatalf("Disable: %v, enabled %v", err, p.Enabled)
	}
	if c, err := net.Dial("tcp4", p.Listen); err == nil {
		c.Close()
		t.Fatal("a disabled proxy accepts connections")
	}
	if err := p.Enable(); err != nil || !p.Enabled {
		t.Fatalf("Enable: %v", err)
	}
	roundTrip(t, dial(t, p.Listen), "again")

	other := echoServer(t)
	p.Upstream = other
	if err := p.Save(); err != nil || p.Upstream != other {
		t.Fatalf("Save with a new upstream: %v, %+v", err, p)
	}
	roundTrip(t, dial(t, p.Listen), "other")

	if v, err := cl.Version(); err != nil || string(v) != "{\"version\": \"netemu v1.2.3\"}\n" {
		t.Errorf("Version: %q, %v", v, err)
	}
	if err := p.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Proxy("echo"); err == nil || err.Error() != "HTTP 404: proxy not found" {
		t.Errorf("Proxy after Delete: %v; want HTTP 404: proxy not found", err)
	}
	if err := p.Delete(); err == nil || err.Error() != "Delete: HTTP 404: proxy not found" {
		t.Errorf("Delete twice: %v", err)
	}
}

// Populate creates, keeps a proxy that does not differ (with its toxics),
// replaces one that does, and validates everything first.
func TestPopulate(t *testing.T) {
	_, cl, _ := serve(t, toxiproxy.Config{})
	up := echoServer(t)
	ps, err := cl.Populate([]tpclient.Proxy{{Name: "a", Listen: "127.0.0.1:0", Upstream: up, Enabled: true}, {Name: "b", Listen: "127.0.0.1:0", Upstream: up, Enabled: true}})
	if err != nil || len(ps) != 2 || ps[0].Name != "a" || ps[1].Name != "b" || strings.HasSuffix(ps[0].Listen, ":0") {
		t.Fatalf("Populate: %v, %v", ps, err)
	}
	if _, err := ps[0].AddToxic("", "latency", "", 1, tpclient.Attributes{"latency": 10}); err != nil {
		t.Fatal(err)
	}
	again, err := cl.Populate([]tpclient.Proxy{{Name: "a", Listen: ps[0].Listen, Upstream: up}})
	if err != nil || len(again) != 1 || again[0].Listen != ps[0].Listen || !again[0].Enabled || len(again[0].ActiveToxics) != 1 {
		t.Fatalf("Populate with the same proxy: %+v, %v; want it unchanged, toxics and all", again, err)
	}
	_, err = cl.Populate([]tpclient.Proxy{{Name: "c", Upstream: up}, {Upstream: up}})
	if err == nil || err.Error() != "Populate: HTTP 400: missing required field: name at proxy 2" {
		t.Errorf("Populate without a name: %v", err)
	}
	if all, _ := cl.Proxies(); len(all) != 2 {
		t.Errorf("after a refused populate, %d proxies; want 2 (nothing created)", len(all))
	}
}

// The client's toxic operations, with toxiproxy's defaults (name
// <type>_<stream>, downstream, toxicity 1), order (upstream's first),
// partial updates and reset.
func TestToxicsAPI(t *testing.T) {
	_, cl, _ := serve(t, toxiproxy.Config{})
	p, err := cl.CreateProxy("db", "127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := p.AddToxic("", "latency", "", -1, tpclient.Attributes{"latency": 100})
	if err != nil || tx.Name != "latency_downstream" || tx.Stream != "downstream" || tx.Toxicity != 1 ||
		tx.Attributes["latency"] != 100.0 || tx.Attributes["jitter"] != 0.0 {
		t.Fatalf("AddToxic: %+v, %v; want latency_downstream, downstream, toxicity 1, latency 100, jitter 0", tx, err)
	}
	if _, err := p.AddToxic("cut", "limit_data", "upstream", 0.2, tpclient.Attributes{"bytes": 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddToxic("shaky", "netem", "downstream", 1, tpclient.Attributes{"options": "delay 5ms loss 1%"}); err != nil {
		t.Fatal(err)
	}
	list, err := p.Toxics()
	if err != nil || len(list) != 3 || list[0].Name != "cut" || list[0].Toxicity != 0.2 || list[1].Name != "latency_downstream" || list[2].Attributes["options"] != "delay 5ms loss 1%" {
		t.Fatalf("Toxics: %+v, %v; want cut (upstream) first, then the downstream ones in order", list, err)
	}
	tx, err = p.UpdateToxic("latency_downstream", -1, tpclient.Attributes{"jitter": 5})
	if err != nil || tx.Attributes["latency"] != 100.0 || tx.Attributes["jitter"] != 5.0 || tx.Toxicity != 1 {
		t.Fatalf("UpdateToxic jitter: %+v, %v; want latency kept, jitter 5, toxicity kept", tx, err)
	}
	if _, err := p.UpdateToxic("nope", -1, nil); err == nil || err.Error() != "HTTP 404: toxic not found" {
		t.Errorf("UpdateToxic of no toxic: %v", err)
	}
	if _, err := p.AddToxic("cut", "latency", "downstream", 1, nil); err == nil || err.Error() != "AddToxic: HTTP 409: toxic already exists" {
		t.Errorf("AddToxic of a name in use on the other stream: %v", err)
	}
	if err := p.RemoveToxic("cut"); err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveToxic("cut"); err == nil || err.Error() != "HTTP 404: toxic not found" {
		t.Errorf("RemoveToxic twice: %v", err)
	}
	if err := p.Disable(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ResetState(); err != nil {
		t.Fatal(err)
	}
	got, err := cl.Proxy("db")
	if err != nil || !got.Enabled || len(got.ActiveToxics) != 0 || got.Listen != p.Listen {
		t.Fatalf("after reset: %+v, %v; want enabled on %s, no toxics", got, err, p.Listen)
	}
	roundTrip(t, dial(t, got.Listen), "after reset")
}

// raw sends one request and returns the status, the Content-Type and the
// body.
func raw(t *testing.T, s *toxiproxy.Server, method, path, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.Addr().String()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// Every refusal has toxiproxy's status and body, word for word, and one
// line in the log.
func TestErrors(t *testing.T) {
	s, _, log := serve(t, toxiproxy.Config{})
	up := echoServer(t)
	if code, _, body := raw(t, s, "POST", "/proxies", `{"name":"p","listen":"127.0.0.1:0","upstream":"`+up+`"}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	log.take()
	for _, c := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"POST", "/proxies", `{"name":"p","upstream":"` + up + `"}`, 409, `{"error":"proxy already exists","status":409}`},
		{"POST", "/proxies", `{"name":`, 400, `{"error":"bad request body: unexpected EOF","status":400}`},
		{"POST", "/proxies", ``, 400, `{"error":"bad request body: EOF","status":400}`},
		{"POST", "/proxies", `{"upstream":"x:1"}`, 400, `{"error":"missing required field: name","status":400}`},
		{"POST", "/proxies", `{"name":"q"}`, 400, `{"error":"missing required field: upstream","status":400}`},
		{"GET", "/proxies/nope", ``, 404, `{"error":"proxy not found","status":404}`},
		{"POST", "/proxies/nope/toxics", `{"type":"latency"}`, 404, `{"error":"proxy not found","status":404}`},
		{"POST", "/proxies/p/toxics", `{"type":"latency"`, 400, `{"error":"bad request body: unexpected EOF","status":400}`},
		{"POST", "/proxies/p/toxics", `{"type":"down"}`, 400, `{"error":"invalid toxic type","status":400}`},
		{"POST", "/proxies/p/toxics", `{"type":"down","stream":"sideways"}`, 400, `{"error":"stream was invalid, can be either upstream or downstream","status":400}`},
		{"POST", "/proxies/p/toxics", `{"type":"latency","stream":""}`, 400, `{"error":"stream was invalid, can be either upstream or downstream","status":400}`},
		{"POST", "/proxies/p/toxics", `{"type":"bandwidth","attributes":{"rate":-1}}`, 400, `{"error":"invalid bandwidth toxic: rate is -1; want 0 to 125000000 KB/s (0 stops the traffic)","status":400}`},
		{"POST", "/proxies/p/toxics", `{"type":"slicer","attributes":{"average_size":1,"size_variation":9223372036854775807}}`, 400, `{"error":"invalid slicer toxic: size_variation is 9223372036854775807; want 0 to 1073741824 bytes","status":400}`},
		{"POST", "/proxies/p/toxics", `{"type":"latency","attributes":{"latency":18446744073710}}`, 400, `{"error":"invalid latency toxic: latency is 18446744073710; want 0 to 86400000 ms","status":400}`},
		{"POST", "/proxies/p/toxics", `{"type":"latency","attributes":{"latency":1,"jitter":3000}}`, 400, `{"error":"invalid latency toxic: jitter is 3000; want 0 to 2147 ms","status":400}`},
		{"POST", "/proxies/p/toxics", `{"type":"timeout","attributes":{"timeout":9223372036854775807}}`, 400, `{"error":"invalid timeout toxic: timeout is 9223372036854775807; want 0 to 86400000 ms (0 never closes)","status":400}`},
		{"POST", "/proxies/p/toxics", `{"type":"slicer","attributes":{"average_size":0}}`, 400, `{"error":"invalid slicer toxic: average_size is 0; want 1 to 1073741824 bytes","status":400}`},
		{"GET", "/proxies/p/toxics/nope", ``, 404, `{"error":"toxic not found","status":404}`},
		{"DELETE", "/proxies/p/toxics/nope", ``, 404, `{"error":"toxic not found","status":404}`},
	} {
		code, ctype, body := raw(t, s, c.method, c.path, c.body)
		if code != c.code || body != c.want+"\n" || ctype != "text/plain; charset=utf-8" {
			t.Errorf("%s %s %s: %d %q %q; want %d %s", c.method, c.path, c.body, code, ctype, body, c.code, c.want)
		}
		if lines := log.take(); len(lines) != 1 {
			t.Errorf("%s %s %s: log %q; want one line", c.method, c.path, c.body, lines)
		}
	}
	// The toxic that exists already, in either stream, is a conflict,
	// found before its attributes are read.
	if code, _, body := raw(t, s, "POST", "/proxies/p/toxics", `{"type":"latency","name":"l"}`); code != 200 {
		t.Fatalf("toxic: %d %s", code, body)
	}
	if code, _, body := raw(t, s, "POST", "/proxies/p/toxics", `{"type":"latency","name":"l","stream":"upstream","attributes":{"latency":"x"}}`); code != 409 || body != `{"error":"toxic already exists","status":409}`+"\n" {
		t.Errorf("a toxic's name twice: %d %s", code, body)
	}
	// A listen address in use: toxiproxy's 500, with the error of listen.
	if code, _, body := raw(t, s, "POST", "/proxies", `{"name":"busy","listen":"`+up+`","upstream":"`+up+`"}`); code != 500 || !strings.Contains(body, "address already in use") {
		t.Errorf("listen in use: %d %s", code, body)
	}
	// Not toxiproxy's routes: the plain 404, an empty 405; browsers: 403.
	if code, _, body := raw(t, s, "GET", "/proxies/", ``); code != 404 || body != "404 page not found\n" {
		t.Errorf("GET /proxies/: %d %q", code, body)
	}
	if code, _, body := raw(t, s, "PUT", "/proxies/p", `{}`); code != 405 || body != "" {
		t.Errorf("PUT /proxies/p: %d %q", code, body)
	}
	req, _ := http.NewRequest("GET", "http://"+s.Addr().String()+"/proxies", nil)
	req.Header.Set("User-Agent", "Mozilla/5.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || string(b) != "User agent not allowed\n" {
		t.Errorf("a browser: %d %q", resp.StatusCode, b)
	}
	// Successes: compact JSON without a newline, toxiproxy's key order.
	code, ctype, body := raw(t, s, "GET", "/proxies/p/toxics/l", ``)
	if want := `{"attributes":{"latency":0,"jitter":0},"name":"l","type":"latency","stream":"downstream","toxicity":1}`; code != 200 || ctype != "application/json" || body != want {
		t.Errorf("GET toxic: %d %q %s; want %s", code, ctype, body, want)
	}
	code, _, body = raw(t, s, "POST", "/populate", `[]`)
	if code != 201 || body != `{"proxies":null}` {
		t.Errorf("populate []: %d %s", code, body)
	}
	code, ctype, body = raw(t, s, "POST", "/populate", `[{"name":"z","upstream":"`+up+`","listen":"127.0.0.1:0"},{"name":"y"}]`)
	if code != 400 || ctype != "application/json" || body != `{"error":"missing required field: upstream at proxy 2","status":400,"proxies":null}` {
		t.Errorf("populate with an error: %d %q %s", code, ctype, body)
	}
}

// A disabled proxy drops its open connections and refuses new ones;
// enabled again, it serves on the same address.
func TestToggleDropsConnections(t *testing.T) {
	_, cl, _ := serve(t, toxiproxy.Config{})
	p, err := cl.CreateProxy("t", "127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Listen)
	roundTrip(t, c, "open")
	if err := p.Disable(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !(err == io.EOF || errors.Is(err, syscall.ECONNRESET)) {
		t.Errorf("an open connection of a disabled proxy reads %d, %v; want it closed", n, err)
	}
	if _, err := net.Dial("tcp4", p.Listen); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial a disabled proxy: %v; want refused", err)
	}
	if err := p.Enable(); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, dial(t, p.Listen), "back")
}

// Close leaves nothing behind: the API and every proxy's listener
// refuse, and open connections are reset (TestMain checks the
// goroutines).
func TestCloseLeavesNothing(t *testing.T) {
	s, cl, _ := serve(t, toxiproxy.Config{})
	p, err := cl.CreateProxy("p", "127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Listen)
	roundTrip(t, c, "open")
	api := s.Addr().String()
	s.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("an open connection after Close reads %d, %v; want a reset", n, err)
	}
	for _, addr := range []string{api, p.Listen} {
		if _, err := net.Dial("tcp4", addr); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial %s after Close: %v; want refused", addr, err)
		}
	}
}

// A client that sends its body slowly holds up its own request, not the
// API: the server reads a body before it takes its lock.
func TestSlowBodyHoldsOnlyItsRequest(t *testing.T) {
	s, client, _ := serve(t, toxiproxy.Config{})
	if _, err := client.CreateProxy("web", "127.0.0.1:0", echoServer(t)); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "PATCH /proxies/web HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n{")
	time.Sleep(100 * time.Millisecond) // the server is reading the body
	start := time.Now()
	if _, err := client.Proxies(); err != nil {
		t.Fatal(err)
	}
	// It waited 15 s, the server's read timeout, while the body came.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("GET /proxies took %v beside a request whose body is slow; want it served at once", took)
	}
}
