package toxiproxy_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	tpclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/netemu/netemu/internal/soak"
	"github.com/netemu/netemu/toxiproxy"
)

// The toxiproxy server's soak: loads that froze a proxy's network or
// the API before, each bounded in count and time, on the real clock with
// netemu's TCP (the server's default), then a probe that must cross and
// an API that must answer. Three clients resetting at once froze a
// proxy's network (a lock-order deadlock in the TCP); a DELETE then
// blocked the whole API behind it. With a network per connection that
// race is rare (tens of thousands of connections); emu's
// TestResetChurnRealClock and proxy's TestSoak find it in a bounded run,
// this soak what the server makes of many networks.
var soakBounds = soak.Bounds{
	PerConn: 20 * time.Second, // for one connection, however loaded the machine
	Drain:   20 * time.Second, // for the server to end its connections' networks
	// Each connection has a network of its own, gone when it ends; what
	// stays is netemu's TCP's spare ring chunks (at most 8 MiB) and the
	// links' spare buffers. A network left behind holds over 100 KB.
	HeapSlack: 16 << 20,
	FDSlack:   8, // the runtime's own, and the API client's keep-alives
}

// soakServer starts a server with two proxies: "soak", to an echo
// upstream, with a latency toxic so that every connection crosses a
// shaped link, and "refused", to a port where nothing listens. It
// returns their listen addresses.
func soakServer(t testing.TB) (s *toxiproxy.Server, cl *tpclient.Client, echo, refused string) {
	t.Helper()
	up, stop, err := soak.EchoServer()
	if err != nil {
		t.Fatal(err)
	}
	s, err = toxiproxy.New(toxiproxy.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		stop()
		http.DefaultClient.CloseIdleConnections()
	})
	cl = tpclient.NewClient(s.Addr().String())
	p, err := cl.CreateProxy("soak", "127.0.0.1:0", up)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddToxic("rtt", "latency", "downstream", 1, tpclient.Attributes{"latency": 1}); err != nil {
		t.Fatal(err)
	}
	r, err := cl.CreateProxy("refused", "127.0.0.1:0", soak.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	return s, cl, p.Listen, r.Listen
}

// settled reports whether s has no connection open: one network stuck
// fails a soak.
func settled(s *toxiproxy.Server) func() bool {
	return func() bool { return toxiproxy.OpenConns(s) == 0 }
}

// apiAnswers fails t unless the API lists its proxies within the bound.
func apiAnswers(t testing.TB, cl *tpclient.Client) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := cl.Proxies()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("GET /proxies after the load: %v", err)
		}
	case <-time.After(soakBounds.PerConn):
		t.Fatalf("GET /proxies did not answer within %v after the load", soakBounds.PerConn)
	}
}

type toxiLoad struct {
	name     string
	conns    int
	parallel int
	do       soak.Do
	refused  bool // to the proxy whose upstream refuses
}

var toxiLoads = []toxiLoad{
	{"reset-churn", 3000, 3, soak.Reset, false},
	{"reset-churn-refused", 3000, 3, soak.Reset, true},
	{"idle", 200, 200, soak.Hold(2 * time.Second), false},
	{"half-closed", 200, 200, soak.HalfClose(2 * time.Second), false},
	{"slowloris", 100, 100, soak.Slowloris(20, 100*time.Millisecond), false},
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the soak takes about half a minute")
	}
	s, cl, echo, refused := soakServer(t)
	for _, l := range toxiLoads {
		t.Run(l.name, func(t *testing.T) {
			runToxiLoad(t, s, l, echo, refused)
			apiAnswers(t, cl)
		})
	}
	t.Run("proxies-come-and-go", func(t *testing.T) {
		proxiesComeAndGo(t, cl, echo)
	})
}

// runToxiLoad runs l through s's proxies, then a probe echo; every
// connection must end, its network with it.
func runToxiLoad(t testing.TB, s *toxiproxy.Server, l toxiLoad, echo, refused string) (soak.Result, soak.Peaks) {
	addr := echo
	if l.refused {
		addr = refused
	}
	return soak.Measure(t, soak.Load{Addr: addr, Conns: l.conns, Parallel: l.parallel, Do: l.do},
		soak.Load{Addr: echo, Conns: 5, Do: soak.Echo}, settled(s), soakBounds)
}

// proxiesComeAndGo creates and deletes proxies, each carrying a
// connection when it is deleted, while connections flow through
// another: every API call answers within the bound, and the flow goes
// on.
func proxiesComeAndGo(t testing.TB, cl *tpclient.Client, addr string) (soak.Result, soak.Peaks) {
	up, stop, err := soak.EchoServer()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		apiErr  error
		churned int
	)
	quit := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			err := comeAndGo(cl, fmt.Sprintf("brief-%d", i), up)
			mu.Lock()
			if err != nil && apiErr == nil {
				apiErr = err
			}
			churned++
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	r, peaks := soak.Measure(t, soak.Load{Addr: addr, Conns: 1000, Parallel: 3, Do: soak.Echo},
		soak.Load{Addr: addr, Conns: 5, Do: soak.Echo}, nil, soak.Bounds{PerConn: soakBounds.PerConn, Drain: soakBounds.Drain, HeapSlack: soakBounds.HeapSlack, FDSlack: soakBounds.FDSlack + 4})
	close(quit)
	wg.Wait()
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	t.Logf("%d proxies created and deleted meanwhile", churned)
	return r, peaks
}

// comeAndGo creates a proxy, opens a connection through it, and deletes
// the proxy with the connection open; each API call within the bound.
func comeAndGo(cl *tpclient.Client, name, up string) error {
	type result struct {
		p   *tpclient.Proxy
		err error
	}
	call := func(what string, f func() result) (*tpclient.Proxy, error) {
		done := make(chan result, 1)
		go func() { done <- f() }()
		select {
		case r := <-done:
			if r.err != nil {
				return nil, fmt.Errorf("%s %s: %w", what, name, r.err)
			}
			return r.p, nil
		case <-time.After(soakBounds.PerConn):
			return nil, fmt.Errorf("%s %s did not answer within %v", what, name, soakBounds.PerConn)
		}
	}
	p, err := call("create", func() result {
		p, err := cl.CreateProxy(name, "127.0.0.1:0", up)
		return result{p, err}
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), soakBounds.PerConn)
	defer cancel()
	if err := soak.Echo(ctx, 0, p.Listen); err != nil {
		return fmt.Errorf("through %s: %w", name, err)
	}
	held := make(chan struct{})
	go func() { // a connection open as the proxy goes
		soak.Hold(200*time.Millisecond)(ctx, 0, p.Listen)
		close(held)
	}()
	_, err = call("delete", func() result { return result{nil, p.Delete()} })
	<-held
	return err
}

// BenchmarkSoak runs each load of TestSoak once per iteration and
// reports connections per second, the peak resident set and the peak
// descriptors:
//
//	go test -run X -bench Soak -benchtime 1x ./toxiproxy
func BenchmarkSoak(b *testing.B) {
	for _, l := range toxiLoads {
		b.Run(l.name, func(b *testing.B) {
			s, _, echo, refused := soakServer(b)
			var r soak.Result
			var peaks soak.Peaks
			for b.Loop() {
				r, peaks = runToxiLoad(b, s, l, echo, refused)
			}
			soak.Report(b, r, peaks)
		})
	}
	b.Run("proxies-come-and-go", func(b *testing.B) {
		_, cl, addr, _ := soakServer(b)
		var r soak.Result
		var peaks soak.Peaks
		for b.Loop() {
			r, peaks = proxiesComeAndGo(b, cl, addr)
		}
		soak.Report(b, r, peaks)
	})
}
