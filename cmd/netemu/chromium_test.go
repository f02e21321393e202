//go:build unix

package main

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/realclient"
	"github.com/netemu/netemu/proxy"
	"github.com/netemu/netemu/workloads"
)

// chromiumRTT and chromiumLink are the link of the Chromium tests: the
// reference page's.
const chromiumRTT = 50 * time.Millisecond

var chromiumLink = []string{"--rtt", "50ms", "--rate", "10mbit"}

// chromiumLoad is one load of the test page in Chromium.
type chromiumLoad struct {
	t               realclient.Timing
	conns, requests int32
	// resources is from the first resource's request to the load event;
	// full is the whole load, the document's fetch included.
	resources, full float64
}

// chromiumPage returns netemu run page's time on chromiumLink, in
// milliseconds, and loads a page of as many images as run page has
// resources, of its sizes, served on loopback, in headless Chromium
// through netemu proxy's SOCKS5 listener on the same link, loads times.
// Each load is checked against what holds however loaded the machine:
// every resource asked for once, at most six connections kept alive, and
// the document's request and response across the link in no less than
// one RTT.
//
// run page fetches the resources alone (40 of 3000 bytes, six keep-alive
// connections); a browser first fetches the document that names them:
// the SOCKS5 reply waits for the emulated handshake (1 RTT), then the
// request and the response (1 RTT more), then the parse. So the
// comparison starts when the browser asks for its first resource.
func chromiumPage(tb testing.TB, loads int) (float64, []chromiumLoad) {
	realclient.Chromium(tb)
	code, out, errOut := runNetemu(append([]string{"run", "page", "--json"}, chromiumLink...)...)
	if code != 0 {
		tb.Fatalf("netemu run page: exit %d, %s", code, errOut)
	}
	model := decode(tb, out)[0]["elapsed_ms"].(float64)

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
		tb.Fatal(err)
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
	pc := &proxyCommand{interrupts: make(chan os.Signal, 4), base: proxy.Config{
		LookupHost: func(ctx context.Context, host string) ([]netip.Addr, error) {
			if host != "page.test" {
				return nil, &net.DNSError{Err: "not the test's server", Name: host, IsNotFound: true}
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		DialUpstream: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != "127.0.0.1:80" {
				return nil, fmt.Errorf("%s is not the test's server: %w", addr, syscall.ECONNREFUSED)
			}
			return (&net.Dialer{}).DialContext(ctx, network, server)
		},
	}}
	socks := freeAddr(tb)
	ctx, cancel := context.WithCancelCause(context.Background())
	wait := proxyRun(ctx, pc, append([]string{"--socks5", socks}, chromiumLink...)...)
	defer func() {
		cancel(context.Canceled)
		if code, _, errOut := wait(); code != 130 && code != 0 {
			tb.Errorf("netemu proxy: exit %d, %s", code, errOut)
		}
	}()
	dialRetry(tb, socks).Close()
	// Only the page crosses the link: Chromium's own requests, if any
	// escape its flags, go to a closed port.
	pac := fmt.Sprintf(`function FindProxyForURL(url, host) { return host == "page.test" ? "SOCKS5 %s" : "PROXY %s"; }`, socks, freeAddr(tb))

	var ls []chromiumLoad
	for range loads {
		conns.Store(0)
		requests.Store(0)
		tm := realclient.LoadPage(tb, "http://page.test/", pac)
		srv.SetKeepAlivesEnabled(false) // the last load's connections go
		srv.SetKeepAlivesEnabled(true)
		l := chromiumLoad{t: tm, conns: conns.Load(), requests: requests.Load(), resources: tm.Load - tm.FirstStart(), full: tm.Load}
		tb.Logf("load %d: %.1f ms in all; the document %.1f ms (connect %.1f, request to response %.1f), the resources %.1f ms from the first request, on %d connections",
			len(ls)+1, l.full, tm.ResponseEnd-tm.FetchStart, tm.ConnectEnd-tm.FetchStart, tm.ResponseStart-tm.RequestStart, l.resources, l.conns)
		ls = append(ls, l)
		if len(tm.Resources) != n || l.requests != int32(n+1) {
			tb.Fatalf("the page recorded %d resources and the server answered %d requests; want %d and %d", len(tm.Resources), l.requests, n, n+1)
		}
		// Six connections per host, kept alive: a browser that closed
		// them after each response would open one per resource.
		if l.conns > 6 {
			tb.Errorf("load %d: %d connections to the server; want at most 6, kept alive", len(ls), l.conns)
		}
		// Chromium stamps requestStart before it sends and responseStart
		// when the first byte is in: the request and the response cross
		// the link in between. Its connect is no bound: the navigation
		// may open the connection before fetchStart (connect 42.8 ms was
		// seen at 50 ms RTT).
		if ms, r := float64(chromiumRTT)/float64(time.Millisecond), tm.ResponseStart-tm.RequestStart; r < ms {
			tb.Errorf("load %d: the document's response came %.1f ms after its request; both cross the link: at least %.0f ms", len(ls), r, ms)
		}
	}
	return model, ls
}

// Headless Chromium loads the page through netemu proxy, and the link
// shapes it: the resources take at least the round trips six
// connections need for them (40 requests on six connections: one
// connection carries seven, a round trip each). No upper bound: the
// browser's own work (parsing, decoding, its processes' start-up) is
// the machine's, and on a loaded one it took four times run page's
// figure. How close the two come is BenchmarkChromiumPage's.
func TestChromiumPage(t *testing.T) {
	model, ls := chromiumPage(t, 1)
	l := ls[0]
	waves := (workloads.DefaultPageResources + 5) / 6
	lo := float64(waves) * float64(chromiumRTT) / float64(time.Millisecond)
	t.Logf("netemu run page %s: %.1f ms; Chromium's resources %.1f ms, its whole load %.1f ms", strings.Join(chromiumLink, " "), model, l.resources, l.full)
	if l.resources < lo {
		t.Errorf("Chromium took %.1f ms for the page's resources; want at least %d round trips (%.0f ms)", l.resources, waves, lo)
	}
}

// BenchmarkChromiumPage measures how long Chromium takes for the page's
// resources through netemu proxy, one load per iteration, against netemu
// run page on the same link; docs/PROXY.md has the figures:
//
//	go test -run XXX -bench ChromiumPage -benchtime 9x ./cmd/netemu
func BenchmarkChromiumPage(b *testing.B) {
	model, ls := chromiumPage(b, b.N)
	slices.SortFunc(ls, func(a, b chromiumLoad) int { return cmp.Compare(a.resources, b.resources) })
	med := ls[len(ls)/2]
	b.Logf("netemu run page %s: %.1f ms; Chromium's resources, median of %d: %.1f ms (%.1f–%.1f), its whole load %.1f ms",
		strings.Join(chromiumLink, " "), model, len(ls), med.resources, ls[0].resources, ls[len(ls)-1].resources, med.full)
	b.ReportMetric(med.resources, "resources-ms")
	b.ReportMetric(med.full, "load-ms")
	b.ReportMetric(100*(med.resources/model-1), "%-vs-run-page")
}
