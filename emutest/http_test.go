package emutest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
)

func body(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func text(s string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, s) })
}

// The URL's port picks the server's port; the host name is not looked up.
func TestTransportDialsURLPort(t *testing.T) {
	n := New(t, RTT(10*time.Millisecond))
	s80 := n.HTTPServer(0, text("eighty"))
	s8080 := n.HTTPServer(8080, text("eighty-eighty"))
	c := n.HTTPClient()
	n.Run(func(ctx context.Context) {
		for url, want := range map[string]string{
			"http://server/":                    "eighty",
			s80.URL() + "/":                     "eighty",
			s8080.URL() + "/x":                  "eighty-eighty",
			"http://anything.example:8080/":     "eighty-eighty",
			"http://" + emu.ServerAddr.String(): "eighty",
		} {
			if got := body(t, c, url); got != want {
				t.Errorf("GET %s = %q; want %q", url, got, want)
			}
		}
	})
	if s80.URL() != "http://server:80" || s8080.URL() != "http://server:8080" {
		t.Errorf("URLs %q, %q", s80.URL(), s8080.URL())
	}
	// The client pools connections by host name and port: two names each.
	if s80.Conns() != 2 || s8080.Conns() != 2 {
		t.Errorf("connections %d, %d; want two each (one per host name)", s80.Conns(), s8080.Conns())
	}
}

// Responses carry a Date from the run's clock: the same bytes every run.
func TestServerDateFromRunClock(t *testing.T) {
	n := New(t, RTT(100*time.Millisecond))
	n.HTTPServer(80, text("x"))
	c := n.HTTPClient()
	n.Run(func(ctx context.Context) {
		n.Sleep(ctx, 10*time.Second)
		resp, err := c.Get("http://server/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// The request reaches the server 1.5 round trips after 10s:
		// 10.15s, which the header shows to the second.
		if got, want := resp.Header.Get("Date"), clock.Epoch.Add(10*time.Second).Format(http.TimeFormat); got != want {
			t.Errorf("Date %q; want %q", got, want)
		}
	})
}

func TestServerRejections(t *testing.T) {
	n := New(t)
	for _, c := range []struct {
		s    *Server
		env  emu.Env
		want string
	}{
		{&Server{Handler: text("")}, nil, "emutest: Server.Start needs the network; pass it as env"},
		{&Server{}, n, "emutest: Server.Handler is nil; set the handler to serve"},
		{&Server{Handler: text(""), IdleTimeout: -time.Second}, n, "emutest: Server.IdleTimeout is -1s; want 0 (never) or more"},
	} {
		if err := c.s.Start(c.env); err == nil || err.Error() != c.want {
			t.Errorf("Start: %v; want %q", err, c.want)
		}
	}
	s := &Server{Handler: text("")}
	if err := s.Start(n); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(n); err == nil || err.Error() != "emutest: Server.Start called twice" {
		t.Errorf("second Start: %v", err)
	}
	s2 := &Server{Handler: text("")}
	if err := s2.Start(n); err == nil || !strings.Contains(err.Error(), "emutest: Server.Start: listen tcp 198.18.0.2:80: port in use") {
		t.Errorf("Start on a port in use: %v", err)
	}
	if err := s2.Close(); err != nil {
		t.Errorf("Close of a server that never started: %v", err)
	}

	f := newFakeTB(t)
	f.run(func(tb testing.TB) { New(tb).HTTPServer(80, nil) })
	if want := "emutest: Server.Handler is nil"; !strings.Contains(f.messages(), want) {
		t.Errorf("HTTPServer(80, nil) reported %q; want %q", f.messages(), want)
	}

	func() {
		defer func() {
			if r := recover(); r != "emutest.NewTransport: nil emu.Env; pass the network" {
				t.Errorf("NewTransport(nil) panicked with %v", r)
			}
		}()
		NewTransport(nil)
	}()

	for _, c := range []struct{ network, addr, want string }{
		{"udp", "server:53", `emutest: cannot dial udp "server:53": the emulated hosts speak TCP over IPv4`},
		{"tcp6", "server:80", `emutest: cannot dial tcp6 "server:80": the emulated hosts speak TCP over IPv4`},
		{"tcp", "server", `emutest: cannot dial "server": address server: missing port in address`},
		{"tcp", "server:0", `emutest: cannot dial "server:0": want a port from 1 to 65535`},
		{"tcp", "server:65536", `emutest: cannot dial "server:65536": want a port from 1 to 65535`},
		{"tcp", "server:http", `emutest: cannot dial "server:http": want a port from 1 to 65535`},
	} {
		if _, err := portOf(c.network, c.addr); err == nil || err.Error() != c.want {
			t.Errorf("portOf(%q, %q): %v; want %q", c.network, c.addr, err, c.want)
		}
	}
}

// On the real clock the same helpers work; only shapes are asserted: a
// GET on a fresh connection takes at least two round trips.
func TestRealClockHTTP(t *testing.T) {
	n := New(t, RealClock(), RTT(4*time.Millisecond))
	n.HTTPServer(80, text("real"))
	c := n.HTTPClient()
	n.Run(func(ctx context.Context) {
		start := n.Now()
		if got := body(t, c, "http://server/"); got != "real" {
			t.Errorf("body %q", got)
		}
		if d := n.Now().Sub(start); d < 8*time.Millisecond {
			t.Errorf("GET took %v on the real clock; want at least two 4ms round trips", d)
		}
	})
}
