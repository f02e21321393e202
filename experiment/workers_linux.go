package experiment

import (
	"os/exec"
	"syscall"
)

// setWorkerAttr puts a worker in a process group of its own: a terminal's
// Ctrl-C reaches the sweep alone, which kills its workers and waits for
// them. A sweep that dies anyway (SIGKILL, a crash) takes its workers
// with it: the kernel kills each when the thread that started it ends
// (Pdeathsig; startWorker keeps that thread until the worker is waited
// for).
func setWorkerAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
