package toxiproxy_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tpclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/toxiproxy"
)

// apiCall sends one request with a deadline of its own; it fails the
// test if no answer comes within 10 s.
func apiCall(t *testing.T, s *toxiproxy.Server, method, path, body string) (int, time.Duration) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.Addr().String()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "test")
	cl := &http.Client{Timeout: 10 * time.Second}
	start := time.Now()
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v; want an answer", method, path, err)
	}
	resp.Body.Close()
	cl.CloseIdleConnections()
	return resp.StatusCode, time.Since(start)
}

// A connection's network that never closes holds up neither the API nor
// Close: DELETE answers at once, the others keep answering, the log
// says what is stuck, and Close returns within its bound, saying so.
func TestStuckNetworkHoldsNothing(t *testing.T) {
	log := &logLines{}
	s, err := toxiproxy.New(toxiproxy.Config{Listen: "127.0.0.1:0", Logf: log.logf})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	unstick := func() { once.Do(func() { close(release) }) }
	var stuck atomic.Int32
	toxiproxy.SetCloseNet(s, func(n *emu.Net) error {
		stuck.Add(1)
		<-release
		return n.Close()
	}, 300*time.Millisecond)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unstick()
		s.Close()
	})
	cl := tpclient.NewClient(s.Addr().String())
	up := echoServer(t)
	p, err := cl.CreateProxy("wedged", "127.0.0.1:0", up)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, dial(t, p.Listen), "hello")

	if code, took := apiCall(t, s, "DELETE", "/proxies/wedged", ""); code != 204 || took > 5*time.Second {
		t.Fatalf("DELETE with a stuck network: %d after %v; want 204 at once", code, took)
	}
	for deadline := time.Now().Add(10 * time.Second); stuck.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the connection's network was never closed")
		}
	}
	// The network is stuck now; the API answers, and the address is free.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/proxies", ""},
		{"POST", "/proxies", `{"name":"again","listen":"` + p.Listen + `","upstream":"` + up + `"}`},
		{"POST", "/proxies/again/toxics", `{"type":"latency"}`},
		{"POST", "/reset", ""},
	} {
		if code, took := apiCall(t, s, c.method, c.path, c.body); code >= 300 || took > 5*time.Second {
			t.Errorf("%s %s beside a stuck network: %d after %v; want an answer at once", c.method, c.path, code, took)
		}
	}
	roundTrip(t, dial(t, p.Listen), "again")
	waitLog(t, log, "wedged: 1 connections still closing")

	start := time.Now()
	err = s.Close()
	if took := time.Since(start); err == nil || !strings.Contains(err.Error(), "proxy wedged: 1") || took > 5*time.Second {
		t.Errorf("Close with a stuck network: %v after %v; want an error naming it within its bound", err, took)
	}
	unstick()
}

// waitLog waits up to 10 s for a log line containing want.
func waitLog(t *testing.T, log *logLines, want string) {
	t.Helper()
	var seen []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range log.take() {
			if strings.Contains(l, want) {
				return
			}
			seen = append(seen, l)
		}
	}
	t.Errorf("no log line with %q in 10 s; the log: %q", want, seen)
}
