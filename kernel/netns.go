//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// namespace is an unnamed network namespace, held by an open file descriptor.
// Nothing names it in the file system, so it disappears when the fd is
// closed or the process ends, however it ends.
type namespace struct {
	fd int
}

// hostNS is the namespace the process started in, for threads to return
// to after visiting another.
var hostNS = func() int {
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}()

// onThread runs f on a locked OS thread and then returns the thread to
// the host namespace and to the runtime. If it cannot return the thread
// (or f left it elsewhere), the thread stays locked and the runtime
// discards it when the goroutine ends (or, for the main thread, parks it).
func onThread(f func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := f()
		if hostNS >= 0 && unix.Setns(hostNS, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

// newNamespace creates a network namespace.
func newNamespace() (*namespace, error) {
	fd := -1
	err := onThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("create network namespace: %w", err)
		}
		var err error
		fd, err = unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &namespace{fd: fd}, nil
}

// do runs f on a locked OS thread inside the namespace. Sockets, TUN
// devices and /proc/sys/net files opened by f belong to the namespace.
func (ns *namespace) do(f func() error) error {
	return onThread(func() error {
		if err := unix.Setns(ns.fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("enter network namespace: %w", err)
		}
		return f()
	})
}

// inode identifies the namespace (as /proc/PID/ns/net links show it).
func (ns *namespace) inode() uint64 {
	var st unix.Stat_t
	if unix.Fstat(ns.fd, &st) != nil {
		return 0
	}
	return st.Ino
}

func (ns *namespace) close() {
	if ns != nil && ns.fd >= 0 {
		unix.Close(ns.fd)
		ns.fd = -1
	}
}

// sysctl writes a /proc/sys value inside the namespace; path is relative
// to /proc/sys, e.g. "net/ipv4/tcp_no_metrics_save".
func (ns *namespace) sysctl(path, value string) error {
	return ns.do(func() error {
		return os.WriteFile("/proc/sys/"+path, []byte(value), 0)
	})
}

// readSysctl reads a /proc/sys value inside the namespace.
func (ns *namespace) readSysctl(path string) (string, error) {
	var v []byte
	err := ns.do(func() error {
		var err error
		v, err = os.ReadFile("/proc/sys/" + path)
		return err
	})
	return string(trimNL(v)), err
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// permission reports whether err means the process lacks a privilege.
func permission(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
}
