//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openTUN creates a TUN device (IPv4 packets, no packet-info header) in
// the calling thread's namespace and returns it as a non-blocking file
// served by Go's poller.
func openTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	var req struct {
		name  [unix.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(req.name[:], name)
	req.flags = unix.IFF_TUN | unix.IFF_NO_PI
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETIFF, uintptr(unsafe.Pointer(&req))); errno != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("create TUN device %s: %w", name, errno)
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun:"+name), nil
}

// tunError words a failure to open a TUN device: a missing privilege or
// a kernel without TUN devices, and how to get them.
func tunError(err error) error {
	switch {
	case permission(err):
		return notPermitted(err)
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENODEV):
		return fmt.Errorf("%w: %v: the kernel has no TUN device; load the tun module (modprobe tun) or create /dev/net/tun (mknod /dev/net/tun c 10 200)", ErrUnsupported, err)
	}
	return err
}
