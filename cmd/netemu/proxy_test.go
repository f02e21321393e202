package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/internal/soak"
)

// freeAddr returns a loopback address nobody listens on (for a moment).
func freeAddr(t testing.TB) string { return soak.FreeAddr(t) }

// echoUpstream is a loopback echo server for the test.
func echoUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// proxyRun runs netemu proxy in the background: through run, as main
// runs it, when pc is nil; otherwise as pc, with the test's stand-ins
// for the process's resolver, dialer and interrupts, its error made an
// exit status as run makes it (commandStatus). The returned function
// waits for it and returns its exit status and output.
func proxyRun(ctx context.Context, pc *proxyCommand, args ...string) func() (int, string, string) {
	var o, e bytes.Buffer
	done := make(chan int, 1)
	go func() {
		if pc == nil {
			done <- run(ctx, append([]string{"proxy"}, args...), &o, &e)
			return
		}
		done <- exitStatus(ctx, pc.run(ctx, &proxyCmd.Command, args, &o, &e), &e)
	}()
	return func() (int, string, string) {
		code := <-done
		return code, o.String(), e.String()
	}
}

// dialRetry dials addr until the proxy listens there.
func dialRetry(t testing.TB, addr string) net.Conn {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp4", addr)
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy does not listen on %s after 10 s: %v", addr, err)
		}
	}
}

func TestProxyBadInput(t *testing.T) {
	up := echoUpstream(t)
	busy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	refusing := freeAddr(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy"}, "nothing to listen on"},
		{[]string{"proxy", "--forward", "8080"}, "LISTEN=UPSTREAM"},
		{[]string{"proxy", "--forward", "8080=host"}, "host:port"},
		{[]string{"proxy", "--forward", "127.0.0.1:0=" + refusing}, "upstream " + refusing + " refuses"},
		{[]string{"proxy", "--forward", busy.Addr().String() + "=" + up}, busy.Addr().String()},
		{[]string{"proxy", "--socks5", busy.Addr().String()}, busy.Addr().String()},
		{[]string{"proxy", "--forward", "127.0.0.1:0=" + up, "--clock", "virtual"}, "--clock virtual does not apply"},
		{[]string{"proxy", "--forward", "127.0.0.1:0=" + up, "--backend", "kernel"}, "--backend does not apply"},
		{[]string{"proxy", "--forward", "127.0.0.1:0=" + up, "--rtt", "10ms,20ms"}, "--rtt has 2 values"},
		{[]string{"proxy", "--forward", "127.0.0.1:0=" + up, "--rate", "fast"}, "--rate"},
		{[]string{"proxy", "--forward", "127.0.0.1:0=" + up, "--grace", "-1s"}, "--grace"},
		{[]string{"proxy", "--forward", "127.0.0.1:0=" + up, "--pcap", "/nonexistent/x.pcap"}, "--pcap"},
		{[]string{"proxy", "--forward", "127.0.0.1:0=" + up, "extra"}, `unexpected argument "extra"`},
	} {
		code, _, stderr := runNetemu(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line with %q", c.args, code, stderr, c.want)
		}
	}
}

// An interrupt stops the proxy: the connection that ended is in the
// summary, with its bytes; the capture holds the link's packets.
func TestProxyCarriesAndSummarizes(t *testing.T) {
	up := echoUpstream(t)
	listen := freeAddr(t)
	pcap := filepath.Join(t.TempDir(), "link.pcap")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	wait := proxyRun(ctx, nil, "--forward", listen+"="+up, "--rtt", "10ms", "--json", "--pcap", pcap)
	c := dialRetry(t, listen)
	c.Write([]byte("hello"))
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	c.Close()
	if err != nil || string(b) != "hello" {
		t.Fatalf("read %q, %v; want hello", b, err)
	}
	time.Sleep(50 * time.Millisecond) // the record is filed
	cancel(&cli.SignalError{Sig: os.Interrupt})
	code, stdout, stderr := wait()
	if code != 130 || strings.Contains(stderr, "interrupted") || !strings.Contains(stderr, "netemu proxy: the link: ") {
		t.Errorf("exit %d, stderr %q; want 130 (stopped by an interrupt), the link's summary and no line of a run cut short", code, stderr)
	}
	recs := decode(t, stdout)
	if len(recs) != 1 || recs[0]["bytes_up"] != 5.0 || recs[0]["bytes_down"] != 5.0 || recs[0]["upstream"] != up {
		t.Errorf("summary %q; want one connection, 5 bytes each way, to %s", stdout, up)
	}
	if st, err := os.Stat(pcap); err != nil || st.Size() < 24+10*40 {
		t.Errorf("the capture: %v, %v; want a pcap file with the connection's packets", st, err)
	}
}

// During the drain a second interrupt resets what is still open, at
// once rather than after --grace.
func TestProxySecondInterrupt(t *testing.T) {
	sigs := make(chan os.Signal, 4) // the process's interrupts, as the test sends them
	up := echoUpstream(t)
	listen := freeAddr(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	wait := proxyRun(ctx, &proxyCommand{interrupts: sigs}, "--forward", listen+"="+up, "--rtt", "2ms", "--grace", "1h")
	c := dialRetry(t, listen)
	defer c.Close()
	c.Write([]byte("x"))
	c.Read(make([]byte, 1))
	// The first interrupt: main cancels the context, and the signal
	// reaches the proxy's channel too.
	cancel(&cli.SignalError{Sig: os.Interrupt})
	sigs <- os.Interrupt
	done := make(chan struct{})
	var code int
	var stdout string
	go func() { code, stdout, _ = wait(); close(done) }()
	select {
	case <-done:
		t.Fatal("the proxy ended with a connection open and the grace period running")
	case <-time.After(200 * time.Millisecond):
	}
	sigs <- os.Interrupt
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a second interrupt did not stop the proxy (grace 1h)")
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("client read: %v; want ECONNRESET", err)
	}
	if code != 130 || !strings.Contains(stdout, "aborted: the proxy closed") {
		t.Errorf("exit %d, summary %q; want 130 and the connection aborted", code, stdout)
	}
}

// A port alone listens on loopback, quietly; an address beyond loopback
// is taken as given, with a warning that says who can reach what.
func TestProxyListenScope(t *testing.T) {
	for _, c := range []struct {
		args    []string
		listen  string
		warning bool
	}{
		{[]string{"--socks5", ":0"}, "SOCKS5 and HTTP CONNECT on 127.0.0.1:", false},
		{[]string{"--socks5", "0.0.0.0:0"}, "SOCKS5 and HTTP CONNECT on 0.0.0.0:", true},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&cli.SignalError{Sig: os.Interrupt}) // it lists its listeners, then stops
		code, _, stderr := proxyRun(ctx, nil, c.args...)()
		if code != 130 || !strings.Contains(stderr, c.listen) {
			t.Errorf("proxy %q: exit %d, stderr %q; want it to listen as %q", c.args, code, stderr, c.listen)
		}
		if warned := strings.Contains(stderr, "warning: ") && strings.Contains(stderr, "beyond loopback"); warned != c.warning {
			t.Errorf("proxy %q: warned %v, stderr %q; want %v", c.args, warned, stderr, c.warning)
		}
	}
	// A forward's port alone: the proxy listens on 127.0.0.1.
	_, port, _ := net.SplitHostPort(freeAddr(t))
	ctx, cancel := context.WithCancelCause(context.Background())
	wait := proxyRun(ctx, nil, "--forward", ":"+port+"="+echoUpstream(t))
	dialRetry(t, "127.0.0.1:"+port).Close()
	cancel(&cli.SignalError{Sig: os.Interrupt})
	if code, _, stderr := wait(); code != 130 || !strings.Contains(stderr, "netemu proxy: 127.0.0.1:"+port+" → ") || strings.Contains(stderr, "warning") {
		t.Errorf("proxy --forward :%s=…: exit %d, stderr %q; want it on 127.0.0.1:%s, without a warning", port, code, stderr, port)
	}
	if code, _, stderr := runNetemu("proxy", "--forward", "127.0.0.1:0="+echoUpstream(t), "--allow", "10.0.0.0/8"); code != 2 || !strings.Contains(stderr, "--allow 10.0.0.0/8 applies to --socks5") {
		t.Errorf("--allow without --socks5: exit %d, stderr %q; want 2 and a line saying so", code, stderr)
	}
	if code, _, stderr := runNetemu("proxy", "--socks5", "127.0.0.1:0", "--allow", "10.0.0"); code != 2 || !strings.Contains(stderr, "want an address or a prefix") {
		t.Errorf("--allow 10.0.0: exit %d, stderr %q; want 2 and a line saying what works", code, stderr)
	}
}

// The summary's total of retransmits and the link's line at its foot
// count the same retransmissions: on a lossy link, with the handshakes,
// the data and the FINs of the connections lost now and then, for either
// TCP. The rows, and the line of those in no connection's record, add up
// to the total. (The upstream closes after the client, once its data has
// arrived: with data lost just before a FIN, gVisor's TCP can stall.) The
// loss is 3 %: at 8 % gVisor's TCP now and then stopped retransmitting a
// connection's tail (docs/UPSTREAM.md, its Outstanding count at 0 with
// data unacknowledged), past the clients' deadline.
func TestProxyRetransmitTotalsAgree(t *testing.T) {
	const conns, size = 20, 64 << 10
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Read(make([]byte, 1))
				c.Write(make([]byte, size))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	for _, tcp := range []string{"gvisor", "netemu"} {
		t.Run(tcp, func(t *testing.T) {
			listen := freeAddr(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			// A connection's close crosses the lossy link too: on a busy
			// machine its FINs' retransmission timeouts can outlast the
			// default grace of 5 s, which would abort it. The interrupt
			// below lets every connection end.
			wait := proxyRun(ctx, nil, "--forward", listen+"="+ln.Addr().String(), "--rtt", "10ms", "--loss", "3%", "--tcp", tcp, "--check=false", "--grace", "2m")
			first := dialRetry(t, listen) // the proxy listens
			errs := make(chan error, conns)
			for i := range conns {
				go func() {
					c := first
					if i > 0 {
						var err error
						if c, err = net.Dial("tcp4", listen); err != nil {
							errs <- err
							return
						}
					}
					defer c.Close()
					c.SetDeadline(time.Now().Add(2 * time.Minute))
					c.Write([]byte{1})
					_, err := io.ReadFull(c, make([]byte, size))
					errs <- err
				}()
			}
			for range conns {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			cancel(&cli.SignalError{Sig: os.Interrupt})
			code, stdout, stderr := wait()
			if code != 130 {
				t.Fatalf("exit %d, stderr %q; want 130", code, stderr)
			}
			lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
			// The total row: "total", the connections (two words),
			// bytes up and down, retransmits.
			total := strings.Fields(lines[len(lines)-1])
			if len(total) != 6 || total[0] != "total" || total[1] != fmt.Sprint(conns) {
				t.Fatalf("summary %q: want a total row of %d connections", stdout, conns)
			}
			total = total[2:]
			m := regexp.MustCompile(`the link: .*, (\d+) retransmitted`).FindStringSubmatch(stderr)
			if m == nil {
				t.Fatalf("stderr %q: no line of the link", stderr)
			}
			if total[3] != m[1] {
				t.Errorf("the summary's total counts %s retransmits, the link's line %s; want the same count\n%s%s", total[3], m[1], stdout, stderr)
			}
			// A row: conn, via (two words), upstream, duration (two),
			// bytes up and down, retransmits; the line of retransmits
			// outside any connection ends with its count.
			sum := 0
			for _, l := range lines[1 : len(lines)-1] {
				f := strings.Fields(l)
				i := 8
				if f[0] == "…" {
					i = len(f) - 1
				}
				n, err := strconv.Atoi(f[i])
				if err != nil || len(f) > 9 {
					t.Fatalf("row %q: want a connection that ended normally, with its retransmits", l)
				}
				sum += n
			}
			if fmt.Sprint(sum) != total[3] {
				t.Errorf("the rows add up to %d retransmits, the total says %s\n%s", sum, total[3], stdout)
			}
			t.Logf("%s retransmits in all", total[3])
		})
	}
}

// A forward that leads back to the proxy is refused at the start, in
// one line, with nothing left listening.
func TestProxyForwardLoop(t *testing.T) {
	a, b := freeAddr(t), freeAddr(t)
	_, port, _ := net.SplitHostPort(a)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy", "--forward", a + "=" + a}, "proxy: --forward " + a + "=" + a + ": upstream " + a + " is its own listen address: a loop"},
		{[]string{"proxy", "--forward", a + "=localhost:" + port}, "is its own listen address: a loop"},
		{[]string{"proxy", "--forward", a + "=" + b, "--forward", b + "=" + a}, "upstream " + b + " is the listen address of forward " + b + "=" + a + ", whose upstream is this one's listen address: a loop"},
	} {
		code, _, stderr := runNetemu(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line with %q", c.args, code, stderr, c.want)
		}
		for _, addr := range []string{a, b} {
			if conn, err := net.Dial("tcp4", addr); err == nil {
				conn.Close()
				t.Errorf("%q: %s accepts after the refusal", c.args, addr)
			}
		}
	}
}
