//go:build linux

package kernel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// RunInClient starts cmd in the client namespace and waits for it, as
// cmd.Run does: the program's sockets are the client's, so its traffic
// to ServerAddr crosses the link with its own kernel TCP.
//
// The program runs in a PID namespace of its own, under this program run
// again as its init (ShellInit: the caller's main must call it when
// IsShellInit), so that nothing it starts can outlive it and keep the
// network namespace: when the program ends, or this process dies (the
// init's parent-death signal), the kernel kills everything left in the
// PID namespace. The init passes signals on and exits with the program's
// status. started, if not nil, receives the init's process once it has
// started: RelaySignal passes a signal on through it.
func (n *Net) RunInClient(cmd *exec.Cmd, started func(*os.Process)) error {
	select {
	case <-n.closed:
		return errClosed
	default:
	}
	if cmd.Err != nil { // the program was not found
		return cmd.Err
	}
	// /proc/self/exe is this program even if its file was replaced or
	// removed since it started.
	initCmd := &exec.Cmd{Path: "/proc/self/exe", Args: append([]string{"netemu-shell-init"}, cmd.Args...)}
	initCmd.Env = append(append([]string{}, cmd.Environ()...), shellInitEnv+"="+cmd.Path)
	initCmd.Dir, initCmd.Stdin, initCmd.Stdout, initCmd.Stderr = cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr
	initCmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	ch := make(chan error, 1)
	go func() {
		// The parent-death signal follows the thread that started the
		// init, not the process: the thread stays locked, and alive,
		// until the init has ended.
		runtime.LockOSThread()
		if err := unix.Setns(n.client.fd, unix.CLONE_NEWNET); err != nil {
			ch <- fmt.Errorf("enter network namespace: %w", err)
			return // the thread ends with the goroutine
		}
		err := initCmd.Start()
		back := hostNS >= 0 && unix.Setns(hostNS, unix.CLONE_NEWNET) == nil
		if err == nil {
			if started != nil {
				started(initCmd.Process)
			}
			err = initCmd.Wait()
		}
		if back {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

// ForwardHost makes the host's loopback service on port reachable from
// the client namespace at ServerAddr:port, across the link: the server
// namespace accepts each connection and connects it to 127.0.0.1:port in
// this process's own namespace. Bytes and half-closes pass through; a
// host port that refuses resets the client's connection. Everything
// closes with the network.
func (n *Net) ForwardHost(port uint16) error {
	ln, err := n.Listen(port)
	if err != nil {
		return fmt.Errorf("kernel: forward %v:%d: %w", ServerAddr, port, err)
	}
	host := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port)
	n.serve(ln, func(c trackedConn) { n.forward(c, dialHost(host)) })
	return nil
}

// serve accepts connections on ln, in the background, and hands each to
// handle on a goroutine of its own, until ln or the network is closed. A
// failed accept that is not a close (no file descriptors left, say) is
// retried after a pause, as net/http's server does.
func (n *Net) serve(ln net.Listener, handle func(trackedConn)) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer ln.Close()
		pause := 5 * time.Millisecond
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				select {
				case <-n.closed:
					return
				case <-time.After(pause):
				}
				pause = min(2*pause, time.Second)
				continue
			}
			pause = 5 * time.Millisecond
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				handle(c.(trackedConn))
			}()
		}
	}()
}

// untilClosed returns a context that ends after d or when the network
// closes, whichever comes first.
func (n *Net) untilClosed(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-n.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// dialHost dials dst from this process's namespace.
func dialHost(dst netip.AddrPort) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp4", dst.String())
	}
}

// forward connects c to what dial opens (within 10 s, or until the
// network closes) and copies both ways until both directions are closed.
func (n *Net) forward(c trackedConn, dial func(context.Context) (net.Conn, error)) {
	defer c.Close()
	ctx, cancel := n.untilClosed(10 * time.Second)
	u, err := dial(ctx)
	cancel()
	if err != nil {
		c.SetLinger(0) // a reset, as a refused connect would give
		return
	}
	// The host's side is not one of the network's sockets (its probe
	// samples the link's connections only), but closes with it too.
	uc := u.(*net.TCPConn)
	defer uc.Close()
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-n.closed:
			uc.Close()
		case <-ended:
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		halfCopy(uc, c.TCPConn)
	}()
	halfCopy(c.TCPConn, uc)
	<-done
}

// halfCopy copies from src to dst until src ends, then closes dst's
// writing half (a FIN), or resets both if src ended with an error.
func halfCopy(dst, src *net.TCPConn) {
	if _, err := io.Copy(dst, src); err != nil && !errors.Is(err, net.ErrClosed) {
		dst.SetLinger(0)
		dst.Close()
		src.Close()
		return
	}
	dst.CloseWrite()
}

// LoopbackListeners returns the TCP ports that listen on the host's
// 127.0.0.1 (or on every IPv4 address) in this process's own namespace,
// as /proc/net/tcp and tcp6 list them, in order.
func LoopbackListeners() ([]uint16, error) {
	var ports []uint16
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		p, err := listeners(f)
		if err != nil && !(errors.Is(err, os.ErrNotExist) && strings.HasSuffix(f, "6")) {
			return nil, err
		}
		ports = append(ports, p...)
	}
	slices.Sort(ports)
	return slices.Compact(ports), nil
}

// loopbackHex are the local addresses, as /proc/net/tcp* write them, that
// a connection to 127.0.0.1 reaches: 0.0.0.0 and 127.0.0.1 (either byte
// order), :: and ::ffff:127.0.0.1.
var loopbackHex = []string{"00000000", "0100007F", "7F000001",
	"00000000000000000000000000000000", "0000000000000000FFFF00000100007F", "0000000000000000FFFF00007F000001"}

// listeners reads the listening ports reachable at 127.0.0.1 from one
// /proc/net/tcp file.
func listeners(path string) ([]uint16, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ports []uint16
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 4 || fields[3] != "0A" { // TCP_LISTEN
			continue
		}
		addr, port, ok := strings.Cut(fields[1], ":")
		if !ok || !slices.Contains(loopbackHex, addr) {
			continue
		}
		if p, err := strconv.ParseUint(port, 16, 16); err == nil {
			ports = append(ports, uint16(p))
		}
	}
	return ports, s.Err()
}
