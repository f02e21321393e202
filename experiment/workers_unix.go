//go:build unix && !linux

package experiment

import (
	"os/exec"
	"syscall"
)

// setWorkerAttr puts a worker in a process group of its own: a terminal's
// Ctrl-C reaches the sweep alone, which kills its workers and waits for
// them. A worker whose sweep died anyway exits when its stdin ends.
func setWorkerAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
