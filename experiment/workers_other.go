//go:build !unix

package experiment

import "os/exec"

// setWorkerAttr does nothing here: a worker whose sweep died exits when
// its stdin ends.
func setWorkerAttr(*exec.Cmd) {}
