//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/realclient"
	"github.com/netemu/netemu/kernel"
	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

// needShell skips tests that run netemu shell where kernel mode cannot
// run: it needs root and a TUN device.
func needShell(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netemu shell needs root (network namespaces, TUN devices); run the tests as root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("netemu shell needs /dev/net/tun: %v", err)
	}
}

// The command's exit status, output and environment pass through.
func TestShellExitStatus(t *testing.T) {
	needShell(t)
	code, out, errOut := runNetemu("shell", "--rtt", "100ms", "--", "sh", "-c", `echo "$NETEMU_SERVER"; exit 3`)
	if code != 3 || out != "198.18.0.2\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 3 and the server's address", code, out, errOut)
	}
	if !strings.Contains(errOut, "netemu shell: exit status 3") {
		t.Errorf("stderr %q; want the summary line", errOut)
	}
}

// shell --pcap names the file it wrote, as run does.
func TestShellAnnouncesItsFiles(t *testing.T) {
	needShell(t)
	pcap := filepath.Join(t.TempDir(), "shell.pcap")
	code, _, errOut := runNetemu("shell", "--rtt", "10ms", "--pcap", pcap, "--", "true")
	if code != 0 || !strings.Contains(errOut, "netemu: wrote "+pcap+" (--pcap)\n") {
		t.Errorf("exit %d, stderr %q; want the wrote line for %s", code, errOut, pcap)
	}
}

// curl in the shell fetches from a Go server on the host's loopback with
// its own kernel TCP: the first request takes the handshake and the
// request (2 RTT), each further one on the kept connection 1 RTT.
func TestShellCurl(t *testing.T) {
	needShell(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }),
		ConnState: func(c net.Conn, s http.ConnState) { conns.Add(int32(bool2int(s == http.StateNew))) },
	}
	go srv.Serve(ln)
	defer srv.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	url := "http://198.18.0.2:" + port + "/"
	const rtt = 55 * time.Millisecond
	code, out, errOut := runNetemu("shell", "--rtt", "55ms", "--rate", "0", "--port", port, "--",
		"curl", "-sS", "-w", `%{time_total}\n`, url+"a", url+"b", url+"c")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	took, err := realclient.CurlTimes(out, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("curl at RTT %v: first request %v, then on the kept connection %v and %v", rtt, took[0], took[1], took[2])
	// Lower bounds are what the link guarantees; the upper bounds only
	// catch a request that waited for something else (a timeout, a new
	// connection's handshake), with room for a busy machine.
	if took[0] < 2*rtt || took[0] > 2*rtt+time.Second {
		t.Errorf("first request %v; want 2 RTT (%v) or a little more", took[0], 2*rtt)
	}
	for i, d := range took[1:] {
		if d < rtt || d > rtt+time.Second {
			t.Errorf("request %d on the kept connection %v; want 1 RTT (%v) or a little more", i+2, d, rtt)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("the server saw %d connections; want 1, kept alive", n)
	}
}

// shellIperf3 runs iperf3 in the shell against a server on the host's
// loopback, at 10 mbit/s and 20 ms RTT, in one direction ("" uploads,
// "-R" downloads), for secs seconds after the first, slow start's, which
// is left out. It returns the rate the receiving end measured.
func shellIperf3(tb testing.TB, reverse string, secs int) float64 {
	_, port, _ := net.SplitHostPort(realclient.Iperf3Server(tb))
	args := append([]string{"shell", "--rtt", "20ms", "--rate", "10mbit", "--port", port, "--",
		"iperf3", "-c", "198.18.0.2", "-p", port, "-t", strconv.Itoa(secs + 1), "-O", "1", "-J"}, strings.Fields(reverse)...)
	code, out, errOut := runNetemu(args...)
	if code != 0 {
		tb.Fatalf("netemu %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
	}
	got, err := realclient.ParseIperf3([]byte(out))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("netemu %s: %.3f Mbit/s received", strings.Join(args, " "), got/1e6)
	return got
}

// shellIperf3Rate is the link's rate of shellIperf3.
const shellIperf3Rate = 10e6

// iperf3 in the shell, both ways: the command's own kernel TCP crosses
// the link, and the receiving end never measures more than its rate
// (realclient.Iperf3Bounds), on a loaded machine too. How close it comes
// to a full link is BenchmarkShellIperf3's.
func TestShellIperf3(t *testing.T) {
	needShell(t)
	for _, dir := range []struct{ name, flags string }{{"upload", ""}, {"download", "-R"}} {
		t.Run(dir.name, func(t *testing.T) {
			if err := realclient.Iperf3Bounds(shellIperf3(t, dir.flags, 2), shellIperf3Rate); err != nil {
				t.Error(err)
			}
		})
	}
}

// BenchmarkShellIperf3 measures what iperf3 in the shell receives, both
// ways, against a full link's payload rate (realclient.Iperf3Full); on an
// idle machine within a few per cent. docs/PROXY.md has the figures:
//
//	go test -run XXX -bench ShellIperf3 ./cmd/netemu
func BenchmarkShellIperf3(b *testing.B) {
	needShell(b)
	for _, dir := range []struct{ name, flags string }{{"upload", ""}, {"download", "-R"}} {
		b.Run(dir.name, func(b *testing.B) {
			var sum float64
			for range b.N {
				sum += shellIperf3(b, dir.flags, 3)
			}
			got := sum / float64(b.N)
			b.ReportMetric(got/1e6, "Mbit/s")
			b.ReportMetric(100*(got/realclient.Iperf3Full(shellIperf3Rate)-1), "%-vs-full-link")
		})
	}
}

func bool2int(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Nothing is left after a shell: no namespace held by this process, no
// device or named namespace on the host, whether the command succeeds or
// fails.
func TestShellLeavesNothing(t *testing.T) {
	needShell(t)
	before := leftovers(t)
	runNetemu("shell", "--", "true")
	runNetemu("shell", "--rtt", "10ms", "--", "sh", "-c", "exit 7")
	runNetemu("shell", "--", "no-such-command-here")
	if after := leftovers(t); !slices.Equal(before, after) {
		t.Errorf("before a shell:\n%s\nafter:\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
}

// leftovers lists what a shell could leave behind: the network
// namespaces this process's threads are in or hold open, the host's
// devices, the named namespaces.
func leftovers(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	links, _ := filepath.Glob("/proc/self/task/*/ns/net")
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, l := range append(links, fds...) {
		if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, "net:") {
			seen[target] = true
		}
	}
	var out []string
	for ns := range seen {
		out = append(out, "namespace "+ns)
	}
	for _, args := range [][]string{{"-o", "link"}, {"netns", "list"}} {
		b, err := exec.Command("ip", args...).Output()
		if err != nil {
			t.Skipf("ip %s: %v", strings.Join(args, " "), err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			// ip -o link numbers the lines; keep the device's name and flags.
			out = append(out, strings.Join(strings.Fields(line)[min(1, len(strings.Fields(line))):], " "))
		}
	}
	slices.Sort(out)
	return out
}

// SIGTERM reaches the command, and netemu exits with its status; SIGKILL
// of netemu kills the command too; and a command that ends normally
// leaves nothing running. In each case the command has started a child
// of its own in the background, which goes with it (the command's PID
// namespace, kernel.RunInClient), and nothing holds its network
// namespace afterwards.
func TestShellSignals(t *testing.T) {
	needShell(t)
	for _, c := range []struct {
		name   string
		sig    syscall.Signal // 0: none, the command ends by itself
		script string
		code   int
	}{
		{"SIGTERM", syscall.SIGTERM, "sleep 60 & readlink /proc/self/ns/net; exec sleep 30", 128 + int(syscall.SIGTERM)},
		{"SIGKILL", syscall.SIGKILL, "sleep 60 & readlink /proc/self/ns/net; exec sleep 30", -1},
		{"exit", 0, "sleep 60 & readlink /proc/self/ns/net", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "shell", "--", "sh", "-c", c.script)
			cmd.Env = append(os.Environ(), testAsNetemuEnv+"=1")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			started := bootTicks(t)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			ns := strings.TrimSpace(line)
			if err != nil || !strings.HasPrefix(ns, "net:[") {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the command said %q (%v)", line, err)
			}
			if c.sig != 0 {
				cmd.Process.Signal(c.sig)
			}
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != c.code {
				t.Errorf("netemu exited %d; want %d", code, c.code)
			}
			deadline := time.Now().Add(5 * time.Second)
			for len(holders(ns, started)) > 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if h := holders(ns, started); len(h) > 0 {
				t.Errorf("the command's namespace %s is still held by %v", ns, h)
				for _, p := range h { // only processes this test started
					if pid, err := strconv.Atoi(strings.Split(p, "/")[2]); err == nil && descends(pid, os.Getpid()) {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
		})
	}
}

// holders lists the processes started at or after the clock tick
// started (procStart's unit) that are in, or hold open, namespace ns.
// The kernel reuses a freed namespace's number at once, and on a shared
// machine another program's namespace may get it: processes older than
// the shell cannot hold the shell's namespace, and are left out.
func holders(ns string, started uint64) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || procStart(pid) < started {
			continue
		}
		links, _ := filepath.Glob(p + "/task/*/ns/net")
		fds, _ := filepath.Glob(p + "/fd/*")
		for _, l := range append(links, fds...) {
			if target, err := os.Readlink(l); err == nil && target == ns {
				out = append(out, l)
			}
		}
	}
	return out
}

// procStat returns the fields of /proc/PID/stat after the command's
// name (from the state on: field 3 of proc(5) is index 0), or nil.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// procStart is when process pid started, in clock ticks since boot
// (field 22 of /proc/PID/stat); 0 if it is gone.
func procStart(pid int) uint64 {
	f := procStat(pid)
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// bootTicks is the time since boot in the clock ticks of procStart,
// read as this process's newest thread would be stamped: a process
// started now has a start time at least this.
func bootTicks(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	secs, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	const hz = 100 // USER_HZ, the unit of /proc/PID/stat's times on Linux
	return uint64(secs*hz) - 1
}

// descends reports whether process pid is ancestor itself or one of its
// descendants (its chain of parents reaches ancestor).
func descends(pid, ancestor int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == ancestor {
			return true
		}
		f := procStat(pid)
		if len(f) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return pid == ancestor
}

// outsideNS is a network namespace of the test's own, joined to the
// host's by a veth pair: a stand-in for the world beyond the host, at
// outsideAddr, that the test can reach without leaving the machine.
type outsideNS struct {
	path string // /run/netns/NAME
}

const (
	outsideNSName = "netemu-test-outside"
	outsideHost   = "198.19.254.1" // the host's end of the veth pair
	outsideAddr   = "198.19.254.2" // the namespace's end
)

// newOutside creates the namespace; the test's cleanup removes it and
// the veth pair, also when the test fails.
func newOutside(t *testing.T) *outsideNS {
	t.Helper()
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	remove := func() {
		ip("link", "del", "nemutest0") // both ends
		ip("netns", "del", outsideNSName)
	}
	remove() // what a run killed before its cleanup left (the names are this test's)
	t.Cleanup(remove)
	for _, args := range [][]string{
		{"netns", "add", outsideNSName},
		{"link", "add", "nemutest0", "type", "veth", "peer", "name", "nemutest1", "netns", outsideNSName},
		{"addr", "add", outsideHost + "/30", "dev", "nemutest0"},
		{"link", "set", "nemutest0", "up"},
		{"-n", outsideNSName, "addr", "add", outsideAddr + "/30", "dev", "nemutest1"},
		{"-n", outsideNSName, "link", "set", "nemutest1", "up"},
		{"-n", outsideNSName, "link", "set", "lo", "up"},
	} {
		if err := ip(args...); err != nil {
			t.Skipf("cannot build the stand-in for the outside: %v", err)
		}
	}
	return &outsideNS{path: "/run/netns/" + outsideNSName}
}

// in runs f on a thread inside the namespace: the sockets f opens are
// the namespace's.
func (o *outsideNS) in(t *testing.T, f func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the thread is thrown away with the goroutine
		ns, err := os.Open(o.path)
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TCP and DNS leave the shell for the world beyond the host, here a
// namespace of the test's own: getent resolves a name through the
// resolver given (the query crosses the link, whichever resolver
// resolv.conf names), and curl reaches a web server there, its lookup,
// its handshake and its request each taking the link's round trip. With
// --isolated neither leaves.
func TestShellOutside(t *testing.T) {
	needShell(t)
	out := newOutside(t)
	var web net.Listener
	var dns net.PacketConn
	out.in(t, func() error {
		var err error
		if web, err = net.Listen("tcp4", outsideAddr+":0"); err != nil {
			return err
		}
		dns, err = net.ListenPacket("udp4", outsideAddr+":53")
		return err
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "from outside") })}
	go srv.Serve(web)
	defer srv.Close()
	defer dns.Close()
	var queries atomic.Int32
	go serveDNS(dns, "page.test.", netip.MustParseAddr(outsideAddr), &queries)

	const rtt = 40 * time.Millisecond
	url := fmt.Sprintf("http://page.test:%d/", web.Addr().(*net.TCPAddr).Port)
	script := `getent ahostsv4 page.test | head -1 && curl -sS -w ' %{time_namelookup} %{time_connect} %{time_total}\n' ` + url
	code, stdout, errOut := runNetemu("shell", "--rtt", "40ms", "--resolver", outsideAddr, "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("exit %d; stdout %q, stderr %q", code, stdout, errOut)
	}
	t.Logf("%s", stdout)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], outsideAddr+" ") || !strings.HasPrefix(lines[1], "from outside ") {
		t.Fatalf("stdout %q; want page.test at %s, then the page", stdout, outsideAddr)
	}
	// curl's own lookup, its handshake and its request each cross the
	// link: one round trip apiece, at least.
	at, err := realclient.CurlTimes(strings.TrimPrefix(lines[1], "from outside "), 3)
	if err != nil {
		t.Fatal(err)
	}
	if at[0] < rtt || at[1]-at[0] < rtt || at[2]-at[1] < rtt {
		t.Errorf("curl's lookup ended at %v, its connect at %v, its request at %v; each crosses the link, one round trip (%v) or more", at[0], at[1], at[2], rtt)
	}
	if queries.Load() == 0 {
		t.Error("the resolver saw no query")
	}
	if !strings.Contains(errOut, "the outside: TCP and DNS (resolver "+outsideAddr+":53)") {
		t.Errorf("stderr %q; want the summary to name the resolver", errOut)
	}

	queries.Store(0)
	direct := fmt.Sprintf("http://%s:%d/", outsideAddr, web.Addr().(*net.TCPAddr).Port)
	code, stdout, errOut = runNetemu("shell", "--isolated", "--", "sh", "-c", "getent ahostsv4 page.test; curl -sS -m 5 "+direct)
	if code == 0 || queries.Load() != 0 || !strings.Contains(errOut, "the outside: none (--isolated)") {
		t.Errorf("--isolated: exit %d, %d queries, stdout %q, stderr %q; want curl to fail, no query", code, queries.Load(), stdout, errOut)
	}
}

// --isolated forwards only the host's loopback ports --port names, none
// by default: a service listening on the host's loopback when the shell
// starts (a proxy, a proxy's API) is no way out unless it is named.
func TestShellIsolatedForwardsOnlyNamedPorts(t *testing.T) {
	needShell(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	var ports [2]string // both listening before the shell starts
	for i := range ports {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "host %d", i) })}
		go srv.Serve(ln)
		defer srv.Close()
		ports[i] = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	}
	server := kernel.ServerAddr.String()
	get := func(port string) string { return "curl -sS -m 5 http://" + server + ":" + port + "/" }

	code, stdout, errOut := runNetemu("shell", "--isolated", "--", "sh", "-c", get(ports[0]))
	if code == 0 || stdout != "" || !strings.Contains(errOut, "host loopback ports at "+server+": none;") {
		t.Errorf("--isolated, no --port: exit %d, stdout %q, stderr %q; want curl to fail, no port forwarded", code, stdout, errOut)
	}

	script := get(ports[0]) + "; echo; " + get(ports[1])
	code, stdout, errOut = runNetemu("shell", "--isolated", "--port", ports[0], "--", "sh", "-c", script)
	if code == 0 || !strings.HasPrefix(stdout, "host 0\n") || strings.Contains(stdout, "host 1") ||
		!strings.Contains(errOut, "host loopback ports at "+server+": "+ports[0]+";") {
		t.Errorf("--isolated --port %s: exit %d, stdout %q, stderr %q; want port %s answered, port %s (listening, not named) refused",
			ports[0], code, stdout, errOut, ports[0], ports[1])
	}
}

// serveDNS answers every A query for name with addr, and any other with
// no record, counting the queries, until pc is closed.
func serveDNS(pc net.PacketConn, name string, addr netip.Addr, queries *atomic.Int32) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		queries.Add(1)
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired})
		b.StartQuestions()
		b.Question(q)
		b.StartAnswers()
		if q.Type == dnsmessage.TypeA && strings.EqualFold(q.Name.String(), name) {
			b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: addr.As4()})
		}
		if msg, err := b.Finish(); err == nil {
			pc.WriteTo(msg, from)
		}
	}
}

// The command's PID namespace has its own /proc: its first process is
// netemu's init, $$ names the shell itself, and an orphan the command
// leaves is reaped (no zombie) while the command goes on.
func TestShellOwnProcesses(t *testing.T) {
	needShell(t)
	script := `tr '\0' '\n' < /proc/1/cmdline | head -1
test "$(cat /proc/$$/comm)" = sh && echo self
( sleep 0.05 & )
sleep 0.5
zombies=0
for f in /proc/[0-9]*/stat; do [ "$(cut -d' ' -f3 "$f" 2>/dev/null)" = Z ] && zombies=$((zombies+1)); done
echo "zombies $zombies"`
	code, out, errOut := runNetemu("shell", "--", "sh", "-c", script)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || lines[0] != "netemu-shell-init" || lines[1] != "self" || lines[2] != "zombies 0" {
		t.Errorf("exit %d, stdout %q, stderr %q; want PID 1 to be netemu's init, /proc/$$ the shell, and no zombie", code, out, errOut)
	}
}

// An interrupt sent to netemu (no terminal in front of it) reaches the
// command once: netemu asks the init to pass it on, and the init's own
// copy of a terminal's interrupt is not passed on twice.
func TestShellRelaysInterrupt(t *testing.T) {
	needShell(t)
	cmd := exec.Command(os.Args[0], "shell", "--", "sh", "-c", `trap "echo INT" INT; echo ready; sleep 1; echo done`)
	cmd.Env = append(os.Environ(), testAsNetemuEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal, whatever runs the test
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	if line, err := r.ReadString('\n'); line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the command said %q (%v)", line, err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	rest, _ := io.ReadAll(r)
	cmd.Wait()
	if string(rest) != "INT\ndone\n" || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("after one SIGINT to netemu the command wrote %q and netemu exited %d; want one INT, then done, and 0", rest, cmd.ProcessState.ExitCode())
	}
}

// The command has none of the host's privileges: no capabilities (so it
// can neither unmount its /proc to see the host's processes, nor enter
// another namespace, nor route 127.0.0.0/8 over the link), no_new_privs
// set, the host's sysctls and sysrq read-only; run under sudo, it runs
// as the invoking user.
func TestShellDropsPrivileges(t *testing.T) {
	needShell(t)
	script := `grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status | tr -d '\t'
id -u
umount -l /proc 2>/dev/null && echo umounted
nsenter --net=/proc/1/ns/net true 2>/dev/null && echo entered
ip route add 127.0.0.0/8 via 198.18.0.2 2>/dev/null && echo routed
sysctl -qw kernel.core_pattern=core 2>/dev/null && echo sysctl
echo > /proc/sysrq-trigger 2>/dev/null && echo sysrq
true`
	want := "CapInh:0000000000000000\nCapPrm:0000000000000000\nCapEff:0000000000000000\nCapBnd:0000000000000000\nCapAmb:0000000000000000\nNoNewPrivs:1\n"
	for _, c := range []struct {
		sudo string
		uid  string
	}{{"", "0"}, {"65534", "65534"}} {
		if c.sudo != "" {
			t.Setenv("SUDO_UID", c.sudo)
			t.Setenv("SUDO_GID", c.sudo)
		} else {
			os.Unsetenv("SUDO_UID") // t.Setenv above restores it after the test
			os.Unsetenv("SUDO_GID")
		}
		code, out, errOut := runNetemu("shell", "--", "sh", "-c", script)
		if code != 0 || out != want+c.uid+"\n" {
			t.Errorf("SUDO_UID=%q: exit %d, stdout %q, stderr %q; want no capabilities, no_new_privs, uid %s, and every escape refused", c.sudo, code, out, errOut, c.uid)
		}
	}
}
