//go:build unix

package proxy

import (
	"net"
	"os"
	"syscall"
)

// waitRead blocks until a read of c would return at once, holding no
// buffer meanwhile (see pipe). It returns the error that read would
// return, io.EOF included, or nil when there is data. An emulated
// connection waits in its stack; a kernel socket in Go's poller, with a
// peek that consumes nothing but a pending error, which is why the error
// is returned here: the next read would not see it. Connections of other
// kinds do not wait here; their Read does.
func waitRead(c net.Conn) error {
	switch c := c.(type) {
	case interface{ WaitRead() error }:
		return c.WaitRead()
	case syscall.Conn:
		rc, err := c.SyscallConn()
		if err != nil {
			return nil
		}
		var perr error
		var b [1]byte
		err = rc.Read(func(fd uintptr) bool {
			_, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			return perr != syscall.EAGAIN && perr != syscall.EINTR
		})
		if err == nil && perr != nil {
			err = &net.OpError{Op: "read", Net: "tcp", Source: c.(net.Conn).LocalAddr(), Addr: c.(net.Conn).RemoteAddr(),
				Err: os.NewSyscallError("read", perr)}
		}
		return err
	}
	return nil
}
