//go:build unix

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/realclient"
	"github.com/netemu/netemu/workloads"
)

// Headless Chromium loads a page of 40 images, served on loopback,
// through netemu proxy's SOCKS5 listener at 50 ms RTT and 10 mbit/s, and
// takes about as long for the page's resources as netemu run page on the
// same link: within 25 %.
//
// run page fetches the resources alone (40 of 3000 bytes, six keep-alive
// connections); a browser first fetches the document that names them:
// the SOCKS5 reply waits for the emulated handshake (1 RTT), then the
// request and the response (1 RTT more), then the parse. So the
// comparison starts when the browser asks for its first resource, and
// the document's response must take its round trip on its own.
func TestChromiumPage(t *testing.T) {
	realclient.Chromium(t)
	const rtt = 50 * time.Millisecond
	linkFlags := []string{"--rtt", "50ms", "--rate", "10mbit"}

	code, out, errOut := runCmd(append([]string{"run", "page", "--json"}, linkFlags...)...)
	if code != 0 {
		t.Fatalf("netemu run page: exit %d, %s", code, errOut)
	}
	model := decode(t, out)[0]["elapsed_ms"].(float64)

	// The page: as many images as run page has resources, of its sizes.
	n, total := workloads.DefaultPageResources, workloads.DefaultPageTotal
	var doc strings.Builder
	doc.WriteString(`<!doctype html><html><head><link rel="icon" href="data:,"></head><body>`)
	for i := range n {
		fmt.Fprintf(&doc, `<img src="/r/%02d">`, i)
	}
	doc.WriteString(realclient.TimingScript + "</body></html>")
	var conns, requests atomic.Int32
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			var i int
			if _, err := fmt.Sscanf(r.URL.Path, "/r/%d", &i); err == nil && i >= 0 && i < n {
				size := total / n
				if i < total%n {
					size++
				}
				w.Header().Set("Content-Type", "image/gif")
				w.Header().Set("Cache-Control", "no-store")
				w.Write(realclient.GIF(size)) // Content-Length: one write under the buffer
				return
			}
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(doc.String()))
		}),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go srv.Serve(ln)
	defer srv.Close()

	// The proxy reaches the test's server under the name page.test, which
	// resolves to 127.0.0.1 (inside the destination rule) and port 80
	// stands for the server's; every other name is refused without a
	// lookup, every other upstream without a dial.
	server := ln.Addr().String()
	oldDial, oldLookup := proxyDialUpstream, proxyLookupHost
	proxyLookupHost = func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host != "page.test" {
			return nil, &net.DNSError{Err: "not the test's server", Name: host, IsNotFound: true}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	proxyDialUpstream = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != "127.0.0.1:80" {
			return nil, fmt.Errorf("%s is not the test's server: %w", addr, syscall.ECONNREFUSED)
		}
		return (&net.Dialer{}).DialContext(ctx, network, server)
	}
	defer func() { proxyDialUpstream, proxyLookupHost = oldDial, oldLookup }()
	fakeInterrupts(t)
	socks := freeAddr(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	wait := proxyRun(ctx, append([]string{"--socks5", socks}, linkFlags...)...)
	defer func() {
		cancel(context.Canceled)
		if code, _, errOut := wait(); code != 130 && code != 0 {
			t.Errorf("netemu proxy: exit %d, %s", code, errOut)
		}
	}()
	dialRetry(t, socks).Close()
	// Only the page crosses the link: Chromium's own requests, if any
	// escape its flags, go to a closed port.
	pac := fmt.Sprintf(`function FindProxyForURL(url, host) { return host == "page.test" ? "SOCKS5 %s" : "PROXY %s"; }`, socks, freeAddr(t))

	type load struct {
		t                         realclient.Timing
		conns, requests           int32
		resources, document, full float64
	}
	var loads []load
	for range 3 {
		conns.Store(0)
		requests.Store(0)
		tm := realclient.LoadPage(t, "http://page.test/", pac)
		srv.SetKeepAlivesEnabled(false) // the last load's connections go
		srv.SetKeepAlivesEnabled(true)
		l := load{t: tm, conns: conns.Load(), requests: requests.Load(),
			resources: tm.Load - tm.FirstStart(), document: tm.ResponseEnd - tm.FetchStart, full: tm.Load}
		t.Logf("load %d: %.1f ms in all; the document %.1f ms (connect %.1f, request to response %.1f), the resources %.1f ms from the first request, on %d connections",
			len(loads)+1, l.full, l.document, tm.ConnectEnd-tm.FetchStart, tm.ResponseStart-tm.RequestStart, l.resources, l.conns)
		loads = append(loads, l)
		if len(tm.Resources) != n || l.requests != int32(n+1) {
			t.Fatalf("the page recorded %d resources and the server answered %d requests; want %d and %d", len(tm.Resources), l.requests, n, n+1)
		}
		// Six connections per host, kept alive: a browser that closed
		// them after each response would open one per resource.
		if l.conns > 6 {
			t.Errorf("load %d: %d connections to the server; want at most 6, kept alive", len(loads), l.conns)
		}
		// Chromium stamps requestStart before it sends and responseStart
		// when the first byte is in: the request and the response cross
		// the link in between. Its connect is no bound: the navigation
		// may open the connection before fetchStart (connect 42.8 ms was
		// seen at 50 ms RTT).
		if ms, r := float64(rtt)/float64(time.Millisecond), tm.ResponseStart-tm.RequestStart; r < ms {
			t.Errorf("load %d: the document's response came %.1f ms after its request; both cross the link: at least %.0f ms", len(loads), r, ms)
		}
	}
	slices.SortFunc(loads, func(a, b load) int { return int(a.resources - b.resources) })
	med := loads[len(loads)/2]
	t.Logf("netemu run page %s: %.1f ms; Chromium's resources, median of %d: %.1f ms (%+.1f %%), its whole load %.1f ms",
		strings.Join(linkFlags, " "), model, len(loads), med.resources, 100*(med.resources/model-1), med.full)
	if d := med.resources/model - 1; d < -0.25 || d > 0.25 {
		t.Errorf("Chromium took %.1f ms for the page's resources, %+.1f %% from netemu run page's %.1f ms; want within 25 %%", med.resources, 100*d, model)
	}
}
