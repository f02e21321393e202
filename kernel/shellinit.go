//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// shellInitEnv marks this program, run again by RunInClient, as the
// first process of the command's PID namespace (ShellInit).
const shellInitEnv = "NETEMU_SHELL_INIT"

// IsShellInit reports whether this process is RunInClient's init: a
// program that calls RunInClient must then call ShellInit, first thing
// in main.
func IsShellInit() bool { return os.Getenv(shellInitEnv) == "1" }

// ShellInit is the first process of the PID namespace RunInClient gives
// the command: it runs the command (its arguments) as its one child,
// passes on the signals it receives, and returns the command's exit
// status (128 plus the signal's number for a command a signal ended).
// When it returns and the process exits, the kernel kills whatever else
// is left in the namespace, the command's own children included: so
// does it when this process is killed, which RunInClient's parent-death
// signal does when netemu dies.
func ShellInit() int {
	args := os.Args[1:]
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "netemu: shell init without a command")
		return 2
	}
	os.Unsetenv(shellInitEnv)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "netemu: shell: %v\n", err)
		return 127
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "netemu: shell: %v\n", err)
	return 1
}
