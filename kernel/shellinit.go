//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// shellInitEnv marks this program, run again by RunInClient, as the
// first process of the command's PID namespace (ShellInit); its value is
// the command's path.
const shellInitEnv = "NETEMU_SHELL_INIT"

// IsShellInit reports whether this process is RunInClient's init: a
// program that calls RunInClient must then call ShellInit, first thing
// in main.
func IsShellInit() bool { return os.Getenv(shellInitEnv) != "" }

// ShellInit is the first process of the PID namespace RunInClient gives
// the command. It mounts the namespace's own /proc (in a mount namespace
// of its own, so that ps and /proc/$$ see the command's processes), runs
// the command (its arguments) as its one child, passes on the signals it
// receives (SIGINT and SIGQUIT as RelaySignal says), reaps the orphans
// the command leaves, and returns the command's exit status (128 plus
// the signal's number for a command a signal ended). When it returns and
// the process exits, the kernel kills whatever else is left in the
// namespace: so does it when this process is killed, which RunInClient's
// parent-death signal does when netemu dies.
func ShellInit() int {
	path, args := os.Getenv(shellInitEnv), os.Args[1:]
	os.Unsetenv(shellInitEnv)
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "netemu: shell init without a command")
		return 2
	}
	// A private copy of the mounts, then a /proc of this PID namespace.
	// Without them the command still runs, with the host's /proc.
	if unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "") == nil {
		if unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "") == nil {
			readOnly("/proc/sys", "/proc/sysrq-trigger")
		}
		readOnly("/sys")
	}
	sigs := make(chan os.Signal, 8)
	// SIGINT and SIGQUIT are caught, not ignored: an ignored signal would
	// stay ignored in the command.
	signal.Notify(sigs, append(ShellSignals, relayInt, relayQuit, terminalInt, terminalQuit)...)
	cmd := &exec.Cmd{Path: path, Args: args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	// The command gets none of the host's privileges: the thread that
	// starts it gives them up first (capabilities are a thread's), so
	// that the child it forks has none.
	runtime.LockOSThread()
	cred, err := dropPrivileges()
	if err != nil {
		fmt.Fprintf(os.Stderr, "netemu: shell: dropping privileges: %v\n", err)
		return 1
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "netemu: shell: %v\n", err)
		if errors.Is(err, os.ErrPermission) {
			return 126
		}
		return 127
	}
	go func() {
		for s := range sigs {
			switch s {
			case syscall.SIGINT, syscall.SIGQUIT:
				// From the terminal, as to netemu (which says so with
				// terminalInt) or from a kill inside the namespace:
				// either way not ours to pass on.
			// After the terminal signalled netemu's process group, which
			// is the init's, the command had it too, unless it moved to a
			// group of its own (timeout(1) does).
			case relayInt, terminalInt:
				if s == relayInt || !sameGroup(cmd.Process.Pid) {
					cmd.Process.Signal(syscall.SIGINT)
				}
			case relayQuit, terminalQuit:
				if s == relayQuit || !sameGroup(cmd.Process.Pid) {
					cmd.Process.Signal(syscall.SIGQUIT)
				}
			default:
				cmd.Process.Signal(s)
			}
		}
	}()
	// Reap every child until the command's own status comes: orphans are
	// this process's children in its namespace.
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "netemu: shell: %v\n", err)
			return 1
		}
		if pid != cmd.Process.Pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// readOnly makes each path read-only in this mount namespace, by a
// bind mount of itself remounted read-only: uid 0 without capabilities
// may still write root's files, and these would change the host (global
// sysctls, sysrq, sysfs), not the namespace. A path that is missing is
// left alone.
func readOnly(paths ...string) {
	for _, p := range paths {
		if unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, "") == nil {
			unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
		}
	}
}

// dropPrivileges takes from the calling thread, and so from what it
// starts, every privilege over the host: it sets no_new_privs (no
// setuid program or file capability gives any back), empties the
// capability bounding set and the ambient set, and then either returns
// the credentials of the user sudo(8) says invoked netemu (SUDO_UID,
// SUDO_GID), for the command to run as, or, without them, empties the
// thread's own capabilities, so that the command runs as uid 0 without
// any. Without CAP_SYS_ADMIN the command cannot unmount its /proc or
// enter another namespace; without CAP_NET_ADMIN it cannot change its
// namespace's routes or addresses.
func dropPrivileges() (*syscall.Credential, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("no_new_privs: %w", err)
	}
	for c := 0; ; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) && c > unix.CAP_SETPCAP {
				break // past the last capability this kernel has
			}
			return nil, fmt.Errorf("the bounding set, capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return nil, fmt.Errorf("the ambient set: %w", err)
	}
	if cred, ok := sudoUser(); ok {
		// The child changes its credentials after the fork, with the
		// effective capabilities still held; a uid other than 0 then
		// clears them.
		return cred, nil
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return nil, fmt.Errorf("capset: %w", err)
	}
	return nil, nil
}

// sudoUser is the user sudo says ran netemu, with their groups; false
// outside sudo, or for root.
func sudoUser() (*syscall.Credential, bool) {
	uid, err1 := strconv.ParseUint(os.Getenv("SUDO_UID"), 10, 32)
	gid, err2 := strconv.ParseUint(os.Getenv("SUDO_GID"), 10, 32)
	if err1 != nil || err2 != nil || uid == 0 {
		return nil, false
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(gid)}}
	if u, err := user.LookupId(strconv.FormatUint(uid, 10)); err == nil {
		if ids, err := u.GroupIds(); err == nil {
			cred.Groups = cred.Groups[:0]
			for _, id := range ids {
				if g, err := strconv.ParseUint(id, 10, 32); err == nil {
					cred.Groups = append(cred.Groups, uint32(g))
				}
			}
		}
	}
	return cred, true
}

// ShellSignals are the signals netemu shell passes on to its command
// (RelaySignal) rather than end by.
var ShellSignals = []os.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2}

// The real-time signals netemu sends the init to have SIGINT or SIGQUIT
// passed on: relay* when someone signalled netemu, terminal* when the
// terminal signalled netemu's foreground process group (which the init
// and, usually, the command are in, so that they had it already).
// Nothing else here uses these numbers (glibc reserves 32 and 33).
const (
	relayInt     = syscall.Signal(40)
	relayQuit    = syscall.Signal(41)
	terminalInt  = syscall.Signal(42)
	terminalQuit = syscall.Signal(43)
)

// sameGroup reports whether process pid is in this process's group.
// Seen from the init's PID namespace, netemu's group is invisible and
// reads as 0 for both; a group the command made is visible.
func sameGroup(pid int) bool {
	pg, err := unix.Getpgid(pid)
	own, oerr := unix.Getpgid(0)
	return err == nil && oerr == nil && pg == own
}

// RelaySignal passes s, which netemu received, on to the command running
// under init (RunInClient's process), through the init. SIGINT and
// SIGQUIT reach the command once: the init passes them on only where the
// terminal has not delivered them to the command already. Other signals
// the init passes on as they are.
func RelaySignal(init *os.Process, s os.Signal) {
	fromTerminal := terminalForeground()
	switch {
	case s == syscall.SIGINT && fromTerminal:
		s = terminalInt
	case s == syscall.SIGINT:
		s = relayInt
	case s == syscall.SIGQUIT && fromTerminal:
		s = terminalQuit
	case s == syscall.SIGQUIT:
		s = relayQuit
	}
	init.Signal(s) // through a pidfd: never another process
}

// terminalForeground reports whether this process's group is the
// foreground group of its controlling terminal: a terminal's SIGINT or
// SIGQUIT went to the whole group.
func terminalForeground() bool {
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	defer tty.Close()
	pg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && pg == unix.Getpgrp()
}
