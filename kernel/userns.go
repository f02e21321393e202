//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// CanReexec reports why this process could not run kernel mode without
// root by starting itself again in a user namespace of its own (nil: it
// can). That needs unprivileged user namespaces and a /dev/net/tun every
// user may open.
func CanReexec() error {
	if os.Getenv(ReexecEnv) != "" {
		return errors.New("already inside a user namespace made for kernel mode")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return errors.New("unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)")
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return errors.New("user namespaces are disabled (user.max_user_namespaces=0)")
	}
	if err := unix.Access("/dev/net/tun", unix.R_OK|unix.W_OK); err != nil {
		return fmt.Errorf("/dev/net/tun is not open to this user (%v); a root user can allow it with chmod 0666 /dev/net/tun", err)
	}
	return nil
}

// Reexec runs this program again with the same arguments inside a new
// user namespace, where the caller is root, and a new network namespace,
// and returns its exit status. Kernel mode then works there without root
// on the host. Standard input, output and error are shared.
func Reexec() (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), ReexecEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), nil
		}
		return 0, fmt.Errorf("start %s in a user namespace: %w", self, err)
	}
	return 0, nil
}

// reexecHint says, in a permission error, whether running without root
// could work here.
func reexecHint() string {
	if err := CanReexec(); err != nil {
		return "running without root needs unprivileged user namespaces and an openable /dev/net/tun, and here " + err.Error()
	}
	return "this machine allows running without root through a user namespace (netemu does that by itself)"
}
