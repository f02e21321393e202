//go:build linux

package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/realclient"
)

// needShell skips tests that run netemu shell where kernel mode cannot
// run: it needs root and a TUN device.
func needShell(t *testing.T) {
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
	code, out, errOut := runCmd("shell", "--rtt", "100ms", "--", "sh", "-c", `echo "$NETEMU_SERVER"; exit 3`)
	if code != 3 || out != "198.18.0.2\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 3 and the server's address", code, out, errOut)
	}
	if !strings.Contains(errOut, "netemu shell: exit status 3") {
		t.Errorf("stderr %q; want the summary line", errOut)
	}
	if code, _, errOut := runCmd("shell", "--", "no-such-command-here"); code != 127 || strings.Count(errOut, "netemu: ") != 1 {
		t.Errorf("a command that is not found: exit %d, stderr %q; want 127 and one line", code, errOut)
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
	code, out, errOut := runCmd("shell", "--rtt", "55ms", "--rate", "0", "--port", port, "--",
		"curl", "-sS", "-w", `%{time_total}\n`, url+"a", url+"b", url+"c")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var took []time.Duration
	for _, f := range strings.Fields(out) {
		s, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("curl wrote %q", out)
		}
		took = append(took, time.Duration(s*float64(time.Second)))
	}
	if len(took) != 3 {
		t.Fatalf("curl wrote %q; want three times", out)
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

// iperf3 in the shell, against a server on the host's loopback, at
// 10 mbit/s both ways: the command's own kernel TCP fills the link. What
// the receiving end measures lies within 5 % of the rate and under the
// payload the link can carry (realclient.Iperf3RateError); the first
// second, slow start's, is left out.
func TestShellIperf3(t *testing.T) {
	needShell(t)
	const rate = 10e6
	_, port, _ := net.SplitHostPort(realclient.Iperf3Server(t))
	for _, dir := range []struct{ name, flags string }{{"upload", ""}, {"download", "-R"}} {
		t.Run(dir.name, func(t *testing.T) {
			args := append([]string{"shell", "--rtt", "20ms", "--rate", "10mbit", "--port", port, "--",
				"iperf3", "-c", "198.18.0.2", "-p", port, "-t", "4", "-O", "1", "-J"}, strings.Fields(dir.flags)...)
			code, out, errOut := runCmd(args...)
			if code != 0 {
				t.Fatalf("netemu %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
			}
			got, err := realclient.ParseIperf3([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("netemu %s: %.3f Mbit/s received", strings.Join(args, " "), got/1e6)
			if err := realclient.Iperf3RateError(got, rate); err != nil {
				t.Error(err)
			}
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
	runCmd("shell", "--", "true")
	runCmd("shell", "--rtt", "10ms", "--", "sh", "-c", "exit 7")
	runCmd("shell", "--", "no-such-command-here")
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
// of netemu kills the command too. Either way its namespace is gone.
func TestShellSignals(t *testing.T) {
	needShell(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		cmd := exec.Command(os.Args[0], "shell", "--", "sh", "-c", "echo $$; exec sleep 30")
		cmd.Env = append(os.Environ(), testAsNetemuEnv+"=1")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		pid, perr := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || perr != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the command said %q (%v)", line, err)
		}
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Process.Signal(sig)
		cmd.Wait()
		if sig == syscall.SIGTERM && cmd.ProcessState.ExitCode() != 128+int(syscall.SIGTERM) {
			t.Errorf("after SIGTERM netemu exited %d; want 143, the command's", cmd.ProcessState.ExitCode())
		}
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			syscall.Kill(pid, syscall.SIGKILL) // the command netemu started for this test
			t.Errorf("after %v of netemu, its command (pid %d) still runs", sig, pid)
		}
		if h := holders(ns); len(h) > 0 {
			t.Errorf("after %v, the command's namespace %s is held by %v", sig, ns, h)
		}
	}
}

// holders lists the processes that are in, or hold open, namespace ns.
func holders(ns string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
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
