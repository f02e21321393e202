// Package cli is netemu's command line as a library: the shared flags
// (the link, its impairments, the stacks, the outputs, a sweep's, kernel
// mode's), grouped and registered on a flag set by what a command
// declares it takes (Rules), and their translation into experiment's
// grid of cases; the study files of a sweep; the notes, refusals and
// help texts in the command line's words; and the progress bar. A front
// end (cmd/netemu, bench/accuracy, any other) declares each command's
// Rules once and asks this package; no command is known here by name.
//
// Every refusal of bad input is a *UsageError: one line that says what
// was typed and what would work, for exit status 2.
package cli

import (
	"fmt"
	"runtime"

	"github.com/netemu/netemu/experiment"
)

// UsageError is bad input: reported in one line, exit status 2, as the
// library's experiment.InputError is.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// Usagef returns a *UsageError with the message format makes of args.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Sprintf(format, args...)}
}

// MaxCells bounds a sweep's cells (experiment.MaxCells), counted before
// any is built.
const MaxCells = experiment.MaxCells

// AvailableCPUs is the number of CPUs this process may use (the
// cgroup's limit in a container), the default number of a sweep's
// workers.
func AvailableCPUs() int { return runtime.GOMAXPROCS(0) }
