package experiment

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// A file that is not one, endless and without a newline, is refused
// once a line passes the bound, by a merge and by a resumed sweep, in a
// line that says so; reading does not hold it all. The bound is lowered
// to 1 MiB for the test: the check is the same at any bound.
func TestResultsFileUnboundedLine(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	defer func(n int) { maxResultLine = n }(maxResultLine)
	maxResultLine = 1 << 20
	ctx := context.Background()
	_, _, mergeErr := MergeResults(ctx, []string{"/dev/zero"})
	s := Sweep{Cases: []Case{{}}, Seeds: []uint64{1}, Results: "/dev/zero", Resume: true}
	resumeErr := s.Run(ctx, InProcess{}, nil, nil)
	for _, err := range []error{mergeErr, resumeErr} {
		var ie *InputError
		if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), "/dev/zero:1: a line longer than 1 MiB") {
			t.Errorf("%v; want an InputError: /dev/zero:1: a line longer than 1 MiB…", err)
		}
	}
}
