package main

import (
	"strconv"
	"strings"
	"testing"
)

// The output is the same bytes whatever the number of workers: tables,
// JSON, with and without seeds.
func TestJobsSameOutput(t *testing.T) {
	for _, extra := range [][]string{nil, {"--json"}, {"--seeds", "1-3"}, {"--seeds", "3", "--json"}} {
		// One process against two worker processes for the four
		// cells: the output must not depend on which worker ends first.
		var outs [2]string
		for i, jobs := range []int{1, 2} {
			code, out, errOut := runNetemu(sweepArgs(append(extra, "--jobs", itoa(jobs))...)...)
			if code != 0 {
				t.Fatalf("%v --jobs %d: exit %d: %s", extra, jobs, code, errOut)
			}
			outs[i] = out
		}
		if outs[0] != outs[1] {
			t.Errorf("%v: the output differs with the number of jobs:\n--jobs 1:\n%s\n--jobs 3:\n%s", extra, outs[0], outs[1])
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A run that fails is reported with its cell's parameters; the other
// cells are in the output, and the exit status is 1. A worker process
// that dies in the middle of a run fails that run alone.
func TestJobsFailingCell(t *testing.T) {
	_, whole, _ := runNetemu(sweepArgs("--seeds", "2", "--jobs", "1")...)
	lines := strings.Split(whole, "\n")
	for _, env := range []string{testFailEnv, testCrashEnv} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "1") // the second cell: rtt 10ms, loss 2%
			code, out, errOut := runNetemu(sweepArgs("--seeds", "2", "--jobs", "2")...)
			if code != 1 {
				t.Errorf("exit %d; want 1", code)
			}
			want := strings.Join(append(lines[:2:2], lines[3:]...), "\n")
			if out != want {
				t.Errorf("output:\n%s\nwant every cell but the failed one:\n%s", out, want)
			}
			if !strings.Contains(errOut, "bulk, rtt 10.0 ms, rate 10mbit, loss 2%, seed 1: ") ||
				!strings.Contains(errOut, "runs failed") {
				t.Errorf("stderr %q; want the failed run's cell and seed", errOut)
			}
		})
	}
}

func TestJobsBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{sweepArgs("--jobs", "0"), "--jobs 0: want the number of worker processes, 1 or more, like --jobs 4"},
		{sweepArgs("--jobs", "-3"), "--jobs -3"},
		{sweepArgs("--jobs", "2", "--clock", "real"), "they run one at a time: drop --jobs"},
		{[]string{"run", "bulk", "--jobs", "2"}, "--jobs does not apply"},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q",
				strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}
