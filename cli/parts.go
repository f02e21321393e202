package cli

import (
	"flag"
	"os"
	"strconv"
	"strings"

	"github.com/netemu/netemu/workloads"
)

// How a sweep's arguments name its study, for its results files
// (experiment/results.go), and its shard.

// runFlags are the flags that say how a sweep runs or prints, not what it
// measures: they are not part of the study; the bool ones take no value.
var runFlags = map[string]bool{"jobs": false, "out": false, "continue": true, "shard": false, "json": true, "plot": false, "spec": false}

// StudyArgs returns args without the flags of runFlags.
func StudyArgs(args []string) []string {
	out := []string{}
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		isBool, ok := runFlags[name]
		if !strings.HasPrefix(args[i], "-") || !ok {
			out = append(out, args[i])
			continue
		}
		if !hasValue && !isBool {
			i++ // its value
		}
	}
	return out
}

// IsSwitch reports whether --name, a shared flag or a workload's, takes
// no value.
func IsSwitch(name string) bool {
	sets := []*flag.FlagSet{NewFlagSet(allFlags, &Options{})}
	for _, k := range workloads.Kinds() {
		fs := flag.NewFlagSet(k.Name, flag.ContinueOnError)
		k.Flags(fs)
		sets = append(sets, fs)
	}
	for _, fs := range sets {
		if f := fs.Lookup(name); f != nil {
			b, ok := f.Value.(interface{ IsBoolFlag() bool })
			return ok && b.IsBoolFlag()
		}
	}
	return false
}

// ParseShard reads --shard i/n: shard i of n, i from 0 to n-1.
func ParseShard(v string) (i, n int, err error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, Usagef("--shard %q: want i/n, shard i of n counted from 0 as Kubernetes counts JOB_COMPLETION_INDEX: 0/3, 1/3 and 2/3", v)
	}
	return i, n, nil
}

// ShardFromEnv is the shard of a task of a batch system, from this
// process's environment (ShardFromEnviron); ok is false outside such a
// task.
func ShardFromEnv() (i, n int, ok bool, err error) {
	i, n, from, err := ShardFromEnviron(os.LookupEnv)
	return i, n, from != "", err
}

// ShardFromEnviron is the shard of a task of a batch system, read with
// lookup (os.LookupEnv): a pod of a Kubernetes Indexed Job
// (shardFromKubernetes) or a task of a SLURM job array (shardFromSLURM).
// from names the variables it was read from, for the note that says so;
// it is "" outside such a task, and then i and n are 0. Both systems'
// variables at once are refused: which one shards is not clear.
func ShardFromEnviron(lookup func(string) (string, bool)) (i, n int, from string, err error) {
	_, k8s := lookup("JOB_COMPLETION_INDEX")
	_, slurm := lookup("SLURM_ARRAY_TASK_ID")
	switch {
	case k8s && slurm:
		return 0, 0, "", Usagef("JOB_COMPLETION_INDEX (a pod of a Kubernetes Indexed Job) and SLURM_ARRAY_TASK_ID (a task of a SLURM job array) are both set; unset the one that does not apply, or give --shard i/n")
	case k8s:
		if i, n, err = shardFromKubernetes(lookup); err != nil {
			return 0, 0, "", err
		}
		return i, n, "JOB_COMPLETION_INDEX and JOB_COMPLETIONS", nil
	case slurm:
		return shardFromSLURM(lookup)
	}
	return 0, 0, "", nil
}

// shardFromKubernetes is the shard of a pod of a Kubernetes Indexed Job:
// its JOB_COMPLETION_INDEX, of JOB_COMPLETIONS (which Kubernetes does not
// set: the Job's manifest does, to its .spec.completions).
func shardFromKubernetes(lookup func(string) (string, bool)) (i, n int, err error) {
	idx, _ := lookup("JOB_COMPLETION_INDEX")
	count, _ := lookup("JOB_COMPLETIONS")
	if count == "" {
		return 0, 0, Usagef("JOB_COMPLETION_INDEX=%s is set (a pod of a Kubernetes Indexed Job) but JOB_COMPLETIONS is not; set it to the Job's .spec.completions in the pod's env, or give --shard %s/N", idx, idx)
	}
	i, n, err = ParseShard(idx + "/" + count)
	if err != nil {
		return 0, 0, Usagef("JOB_COMPLETION_INDEX=%s, JOB_COMPLETIONS=%s: want an index from 0 to JOB_COMPLETIONS-1", idx, count)
	}
	return i, n, nil
}

// shardFromSLURM is the shard of a task of a SLURM job array numbered
// from 0 (sbatch --array=0-N): task SLURM_ARRAY_TASK_ID of
// SLURM_ARRAY_TASK_COUNT, or where the count is not set (older SLURMs),
// of SLURM_ARRAY_TASK_MAX+1; SLURM also sets SLURM_ARRAY_TASK_MIN. An array that does not number its tasks 0 to n-1 is refused, so
// that a shard is never run as another: one started at 1 (--array=1-4),
// one with a step or gaps (--array=0-6:2, --array=0,2,5), or part of an
// array submitted again (--array=2).
func shardFromSLURM(lookup func(string) (string, bool)) (i, n int, from string, err error) {
	id, _ := lookup("SLURM_ARRAY_TASK_ID")
	count, hasCount := lookup("SLURM_ARRAY_TASK_COUNT")
	lo, hasMin := lookup("SLURM_ARRAY_TASK_MIN")
	hi, hasMax := lookup("SLURM_ARRAY_TASK_MAX")
	countVar, raw := "SLURM_ARRAY_TASK_COUNT", count
	if !hasCount {
		if !hasMax {
			return 0, 0, "", Usagef("SLURM_ARRAY_TASK_ID=%s is set (a task of a SLURM job array) but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is; give --shard %s/N", id, id)
		}
		countVar, raw = "SLURM_ARRAY_TASK_MAX", hi
		m, err := strconv.Atoi(hi)
		if err != nil || m < 0 {
			return 0, 0, "", Usagef("SLURM_ARRAY_TASK_MAX=%s: want the array's last task, a number", hi)
		}
		count = strconv.Itoa(m + 1)
	}
	n, err = strconv.Atoi(count)
	if err == nil && ((hasMin && lo != "0") || (hasMax && hi != strconv.Itoa(n-1))) {
		return 0, 0, "", Usagef("SLURM_ARRAY_TASK_ID=%s, in an array whose tasks are numbered %s to %s: netemu runs task i of an array numbered 0 to n-1 (sbatch --array=0-N) as shard i/n; submit the whole array so numbered (tasks whose parts are complete end at once with --continue), or give --shard i/n", id, orUnset(lo, hasMin), orUnset(hi, hasMax))
	}
	if i, n, err = ParseShard(id + "/" + count); err != nil {
		return 0, 0, "", Usagef("SLURM_ARRAY_TASK_ID=%s, %s=%s: want a task from 0 to the array's count less 1, in an array submitted with --array=0-N; or give --shard i/n", id, countVar, raw)
	}
	return i, n, "SLURM_ARRAY_TASK_ID and " + countVar, nil
}

// orUnset is v, or "(unset)" where the variable is not set.
func orUnset(v string, ok bool) string {
	if !ok {
		return "(unset)"
	}
	return v
}
