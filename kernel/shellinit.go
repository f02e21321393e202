//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
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
// receives but SIGINT and SIGQUIT (see RelaySignal), reaps the orphans
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
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
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
			if s != syscall.SIGINT && s != syscall.SIGQUIT {
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

// RelaySignal passes s, which netemu received, on to the command running
// under init (RunInClient's process). SIGINT and SIGQUIT go straight to
// the command, unless the terminal in front of netemu has sent them to
// its foreground process group, the command's too, already: so one
// Ctrl-C is one SIGINT. Other signals go to the init, which passes them
// on.
func RelaySignal(init *os.Process, s os.Signal) {
	if s != syscall.SIGINT && s != syscall.SIGQUIT {
		init.Signal(s)
		return
	}
	if pg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err == nil && pg == unix.Getpgrp() {
		return
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(init.Pid) + "/task/" + strconv.Itoa(init.Pid) + "/children")
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			unix.Kill(pid, s.(syscall.Signal))
		}
	}
}
