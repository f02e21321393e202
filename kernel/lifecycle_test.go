//go:build linux

package kernel

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// The test binary doubles as a child process for the tests below.
func TestMain(m *testing.M) {
	if IsShellInit() {
		os.Exit(ShellInit()) // Shell.Run's program, under this binary run again
	}
	switch os.Getenv("NETEMU_KERNEL_CHILD") {
	case "hold":
		// Build a kernel-mode network, say where it is, and wait to be
		// killed.
		n, err := New(Config{Link: link.Config{Delay: time.Millisecond}, Via: TUN})
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		ino := n.Inodes()
		fmt.Printf("READY %d %d\n", ino[0], ino[1])
		select {}
	case "hold-topology":
		holdTopology() // topology_test.go
	case "new":
		_, err := New(Config{})
		fmt.Println(err)
		os.Exit(0)
	case "userns":
		// Started without root: run again in a user namespace, then
		// build a network there and carry one connection.
		if os.Getenv(ReexecEnv) == "" {
			if err := CanReexec(); err != nil {
				fmt.Println("CANNOT", err)
				os.Exit(0)
			}
			code, err := Reexec()
			if err != nil {
				fmt.Println("ERROR", err)
			}
			os.Exit(code)
		}
		n, err := New(Config{Link: link.Config{Delay: time.Millisecond}, Via: TUN})
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		ln, err := n.Listen(80)
		if err == nil {
			go func() {
				if c, err := ln.Accept(); err == nil {
					c.Write([]byte("hi"))
					c.Close()
				}
			}()
			var c net.Conn
			if c, err = n.Dial(context.Background(), 80); err == nil {
				b := make([]byte, 2)
				_, err = io.ReadFull(c, b)
			}
		}
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Printf("OK uid %d, host uid %s\n", os.Getuid(), os.Getenv("HOST_UID"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// namespaceHolders lists the processes that hold a network namespace with
// one of the given inodes, as a namespace or an open file.
func namespaceHolders(t *testing.T, inodes map[string]bool) []string {
	t.Helper()
	var holders []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		links := []string{p + "/ns/net"}
		fds, _ := filepath.Glob(p + "/fd/*")
		links = append(links, fds...)
		tasks, _ := filepath.Glob(p + "/task/*/ns/net")
		links = append(links, tasks...)
		for _, l := range links {
			if target, err := os.Readlink(l); err == nil && inodes[target] {
				holders = append(holders, l)
			}
		}
	}
	return holders
}

func TestSIGKILLLeavesNothing(t *testing.T) {
	needRoot(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NETEMU_KERNEL_CHILD=hold")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child said nothing: %v", err)
	}
	var a, b uint64
	if _, err := fmt.Sscanf(line, "READY %d %d", &a, &b); err != nil {
		t.Fatalf("child: %q", line)
	}
	inodes := map[string]bool{fmt.Sprintf("net:[%d]", a): true, fmt.Sprintf("net:[%d]", b): true}
	if h := namespaceHolders(t, inodes); len(h) == 0 {
		t.Fatalf("the child's namespaces %v are not visible before the kill", inodes)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true
	if h := namespaceHolders(t, inodes); len(h) != 0 {
		t.Errorf("after SIGKILL, namespaces %v are still held by %v", inodes, h)
	}
	if _, err := net.InterfaceByName(devName); err == nil {
		t.Errorf("a %s device exists in the test's own namespace", devName)
	}
	// Nothing was named in the file system either.
	if entries, _ := os.ReadDir("/run/netns"); len(entries) > 0 {
		for _, e := range entries {
			if strings.Contains(e.Name(), "netemu") {
				t.Errorf("named namespace %s left in /run/netns", e.Name())
			}
		}
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	needRoot(t)
	n, err := New(Config{Via: TUN})
	if err != nil {
		t.Fatal(err)
	}
	ino := n.Inodes()
	inodes := map[string]bool{fmt.Sprintf("net:[%d]", ino[0]): true, fmt.Sprintf("net:[%d]", ino[1]): true}
	n.Close()
	n.Close()
	if h := namespaceHolders(t, inodes); len(h) != 0 {
		t.Errorf("after Close, namespaces are still held by %v", h)
	}
}

// Without privileges, New says what is missing and how to get it.
func TestUnprivilegedError(t *testing.T) {
	needRoot(t) // to switch to an unprivileged user
	msg := runAsNobody(t, "new")
	for _, want := range []string{"kernel mode unavailable", "needs root", "run it as root"} {
		if !strings.Contains(msg, want) {
			t.Errorf("unprivileged New said %q; want it to contain %q", strings.TrimSpace(msg), want)
		}
	}
}

// Without root, where user namespaces are allowed and /dev/net/tun is
// open to every user, kernel mode runs itself again in a user namespace.
// /dev/net/tun is made world-writable for the test and restored after.
func TestUnprivilegedUserNamespace(t *testing.T) {
	needRoot(t)
	if b, _ := os.ReadFile("/proc/sys/user/max_user_namespaces"); strings.TrimSpace(string(b)) == "0" {
		t.Skip("user namespaces are disabled here")
	}
	st, err := os.Stat("/dev/net/tun")
	if err != nil {
		t.Skip(err)
	}
	if err := os.Chmod("/dev/net/tun", 0o666); err != nil {
		t.Skip(err)
	}
	defer os.Chmod("/dev/net/tun", st.Mode().Perm())
	out := runAsNobody(t, "userns")
	if !strings.HasPrefix(out, "OK uid 0") {
		t.Errorf("kernel mode as an unprivileged user: %q; want a working network inside a user namespace", out)
	}
}

// runAsNobody runs this test binary as uid 65534 in the given child mode
// and returns what it printed.
func runAsNobody(t *testing.T, mode string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "netemu-kernel")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "kernel.test")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err == nil {
		_, err = io.Copy(dst, src)
		dst.Close()
	}
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{"NETEMU_KERNEL_CHILD=" + mode}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as nobody: %v: %s", err, out)
	}
	return string(out)
}
