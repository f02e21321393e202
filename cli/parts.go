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

// ShardFromEnv is the shard of a pod of a Kubernetes Indexed Job: its
// JOB_COMPLETION_INDEX, of JOB_COMPLETIONS (which Kubernetes does not
// set: the Job's manifest does, to its .spec.completions). ok is false
// outside such a pod.
func ShardFromEnv() (i, n int, ok bool, err error) {
	idx, ok := os.LookupEnv("JOB_COMPLETION_INDEX")
	if !ok {
		return 0, 0, false, nil
	}
	count := os.Getenv("JOB_COMPLETIONS")
	if count == "" {
		return 0, 0, true, Usagef("JOB_COMPLETION_INDEX=%s is set (a pod of a Kubernetes Indexed Job) but JOB_COMPLETIONS is not; set it to the Job's .spec.completions in the pod's env, or give --shard %s/N", idx, idx)
	}
	i, n, err = ParseShard(idx + "/" + count)
	if err != nil {
		return 0, 0, true, Usagef("JOB_COMPLETION_INDEX=%s, JOB_COMPLETIONS=%s: want an index from 0 to JOB_COMPLETIONS-1", idx, count)
	}
	return i, n, true, nil
}
