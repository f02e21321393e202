package cli

import (
	"errors"
	"strings"
	"testing"
)

// environ is a lookup of ShardFromEnviron over pairs name, value.
func environ(pairs ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// The variables SLURM sets in task id of an array submitted with
// --array=0-(count-1).
func slurmTask(id, count string) []string {
	last := map[string]string{"1": "0", "3": "2", "4": "3"}[count]
	return []string{"SLURM_ARRAY_JOB_ID", "41", "SLURM_ARRAY_TASK_ID", id, "SLURM_ARRAY_TASK_COUNT", count,
		"SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", last, "SLURM_ARRAY_TASK_STEP", "1"}
}

// A pod of an Indexed Job and a task of a job array numbered from 0 are
// a shard each, named with the variables read; elsewhere there is none.
func TestShardFromEnviron(t *testing.T) {
	for _, c := range []struct {
		env        []string
		i, n       int
		from, what string
	}{
		{nil, 0, 0, "", "no batch system"},
		{[]string{"SLURM_JOB_ID", "40"}, 0, 0, "", "a SLURM job that is not an array"},
		{[]string{"JOB_COMPLETION_INDEX", "2", "JOB_COMPLETIONS", "3"}, 2, 3, "JOB_COMPLETION_INDEX and JOB_COMPLETIONS", "Kubernetes"},
		{slurmTask("0", "3"), 0, 3, "SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT", "SLURM, first task"},
		{slurmTask("3", "4"), 3, 4, "SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT", "SLURM, last task"},
		{slurmTask("0", "1"), 0, 1, "SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT", "SLURM, an array of one"},
		{[]string{"SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", "2"}, 1, 3, "SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_MAX", "SLURM without a count"},
		{[]string{"SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_COUNT", "2"}, 1, 2, "SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT", "SLURM with a count alone"},
	} {
		i, n, from, err := ShardFromEnviron(environ(c.env...))
		if err != nil || i != c.i || n != c.n || from != c.from {
			t.Errorf("%s: %d/%d from %q, %v; want %d/%d from %q", c.what, i, n, from, err, c.i, c.n, c.from)
		}
	}
}

// An environment that does not say which shard is refused in a usage
// error that says why and what to do.
func TestShardFromEnvironRefuses(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"JOB_COMPLETION_INDEX", "1"}, "JOB_COMPLETIONS is not"},
		{[]string{"JOB_COMPLETION_INDEX", "5", "JOB_COMPLETIONS", "3"}, "want an index from 0 to JOB_COMPLETIONS-1"},
		{append(slurmTask("1", "3"), "JOB_COMPLETION_INDEX", "1", "JOB_COMPLETIONS", "3"), "are both set"},
		{[]string{"SLURM_ARRAY_TASK_ID", "1"}, "neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is; give --shard 1/N"},
		{[]string{"SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_MAX", "x"}, "SLURM_ARRAY_TASK_MAX=x: want the array's last task"},
		{[]string{"SLURM_ARRAY_TASK_ID", "3", "SLURM_ARRAY_TASK_COUNT", "3"}, "SLURM_ARRAY_TASK_ID=3, SLURM_ARRAY_TASK_COUNT=3: want a task from 0"},
		{[]string{"SLURM_ARRAY_TASK_ID", "one", "SLURM_ARRAY_TASK_COUNT", "3"}, "SLURM_ARRAY_TASK_ID=one, SLURM_ARRAY_TASK_COUNT=3"},
		{[]string{"SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_COUNT", "many"}, "SLURM_ARRAY_TASK_COUNT=many"},
		// --array=1-4: numbered from 1.
		{[]string{"SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_COUNT", "4", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_MAX", "4"}, "SLURM_ARRAY_TASK_ID=1, in an array whose tasks are numbered 1 to 4"},
		// --array=0-6:2 and --array=0,2,5: a step, gaps.
		{[]string{"SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_COUNT", "4", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", "6"}, "numbered 0 to 6"},
		{[]string{"SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_COUNT", "3", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", "5"}, "numbered 0 to 5"},
		// --array=2 after an array of 4: task 2 alone would run the
		// whole study as shard 0/1.
		{[]string{"SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_COUNT", "1", "SLURM_ARRAY_TASK_MIN", "2", "SLURM_ARRAY_TASK_MAX", "2"}, "numbered 2 to 2: netemu runs task i of an array numbered 0 to n-1"},
	} {
		i, n, from, err := ShardFromEnviron(environ(c.env...))
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || i != 0 || n != 0 || from != "" || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %d/%d from %q, %v; want a usage error containing %q", c.env, i, n, from, err, c.want)
		}
	}
}
