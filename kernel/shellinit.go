//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
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
		unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	}
	sigs := make(chan os.Signal, 8)
	// SIGINT and SIGQUIT are caught, not ignored: an ignored signal would
	// stay ignored in the command.
	signal.Notify(sigs, append(ShellSignals, relayInt, relayQuit, terminalInt, terminalQuit)...)
	cmd := &exec.Cmd{Path: path, Args: args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
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
