package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/workloads"
)

// How a sweep's arguments name its study, for its results files
// (experiment/results.go), and its shard.

// runFlags are the flags that say how a sweep runs or prints, not what it
// measures: they are not part of the study; the bool ones take no value.
var runFlags = map[string]bool{"jobs": false, "out": false, "continue": true, "shard": false, "json": true, "plot": false, "spec": false}

// studyArgs returns args without the flags of runFlags.
func studyArgs(args []string) []string {
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

// difference names what differs between the studies of two headers (h's
// value first) where sameStudy says they differ: the study file, its
// contents, a flag of the sweep, a file it reads, or the number of shards.
func difference(h, o experiment.ResultsHeader) string {
	switch {
	case h.Study != o.Study:
		return fmt.Sprintf("the study file differs (%s against %s)", h.Study, o.Study)
	case h.StudySHA256 != o.StudySHA256:
		return fmt.Sprintf("the study file's contents differ (sha256 %.12s… against %.12s…)", h.StudySHA256, o.StudySHA256)
	case !slices.Equal(h.Args, o.Args):
		a, b := argValues(h.Args), argValues(o.Args)
		for _, k := range append(slices.Clone(a.order), b.order...) {
			va, ina := a.values[k]
			vb, inb := b.values[k]
			switch {
			case ina && inb && va != vb:
				return fmt.Sprintf("%s differs (%s against %s)", k, va, vb)
			case ina != inb:
				if !ina {
					va = "not given"
				}
				if !inb {
					vb = "not given"
				}
				return fmt.Sprintf("%s differs (%s against %s)", k, va, vb)
			}
		}
		return fmt.Sprintf("the sweep's arguments differ (%q against %q)", strings.Join(h.Args, " "), strings.Join(o.Args, " "))
	case h.InputsDiffer(o) != "":
		return h.InputsDiffer(o)
	default:
		return fmt.Sprintf("the number of shards differs (%d against %d)", h.Shards, o.Shards)
	}
}

// argValues reads a sweep's arguments as what each names: "the workload"
// for the word that is not a flag, "--rtt" for a flag, with its value
// ("on" for a switch), in their order.
func argValues(args []string) (v struct {
	order  []string
	values map[string]string
}) {
	v.values = map[string]string{}
	set := func(k, val string) {
		if _, ok := v.values[k]; !ok {
			v.order = append(v.order, k)
		}
		v.values[k] = val
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			set("the workload", a)
			continue
		}
		name, val, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok {
			val = "on"
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !isSwitch(name) {
				val, i = args[i+1], i+1
			}
		}
		set("--"+name, val)
	}
	return v
}

// isSwitch reports whether --name, a shared flag or a workload's, takes
// no value.
func isSwitch(name string) bool {
	sets := []*flag.FlagSet{newFlagSet("sweep", &options{})}
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

// parseShard reads --shard i/n: shard i of n, i from 0 to n-1.
func parseShard(v string) (i, n int, err error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, usagef("--shard %q: want i/n, shard i of n counted from 0 as Kubernetes counts JOB_COMPLETION_INDEX: 0/3, 1/3 and 2/3", v)
	}
	return i, n, nil
}

// shardFromEnv is the shard of a pod of a Kubernetes Indexed Job: its
// JOB_COMPLETION_INDEX, of JOB_COMPLETIONS (which Kubernetes does not
// set: the Job's manifest does, to its .spec.completions). ok is false
// outside such a pod.
func shardFromEnv() (i, n int, ok bool, err error) {
	idx, ok := os.LookupEnv("JOB_COMPLETION_INDEX")
	if !ok {
		return 0, 0, false, nil
	}
	count := os.Getenv("JOB_COMPLETIONS")
	if count == "" {
		return 0, 0, true, usagef("JOB_COMPLETION_INDEX=%s is set (a pod of a Kubernetes Indexed Job) but JOB_COMPLETIONS is not; set it to the Job's .spec.completions in the pod's env, or give --shard %s/N", idx, idx)
	}
	i, n, err = parseShard(idx + "/" + count)
	if err != nil {
		return 0, 0, true, usagef("JOB_COMPLETION_INDEX=%s, JOB_COMPLETIONS=%s: want an index from 0 to JOB_COMPLETIONS-1", idx, count)
	}
	return i, n, true, nil
}
