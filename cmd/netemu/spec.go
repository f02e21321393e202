package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/netemu/netemu/experiment"
)

// A study file (experiment.ReadStudy) describes a sweep, so that it is
// versioned and can run again: the workload, then any flag of netemu
// sweep by its name, a list for an axis. netemu sweep --spec study.yaml
// reads it; the command line adds only how the sweep runs and prints
// (--jobs, --out, --continue, --shard, --json, --plot). The file's name
// and SHA-256 go into the records.

// specOutputs are the flags that write files, which a study file does not
// give: running a study someone sent writes nothing but what the command
// line says.
var specOutputs = map[string]bool{"pcap": true, "timeline": true, "waterfall": true}

// specFlag finds --spec in args: its file, and args without it.
func specFlag(args []string) (path string, rest []string, ok bool) {
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || name != "spec" {
			rest = append(rest, args[i])
			continue
		}
		if !hasVal && i+1 < len(args) {
			i++
			val = args[i]
		}
		path, ok = val, true
	}
	return path, rest, ok
}

// withStudy replaces --spec in args, when given, by the arguments of its
// study file, and returns those with the file's name and SHA-256 (both
// "" without --spec). The rest of args may only say how the sweep runs
// and prints.
func withStudy(args []string) (_ []string, study, hash string, err error) {
	path, rest, ok := specFlag(args)
	if !ok {
		return args, "", "", nil
	}
	st, err := readSpec(path)
	if err != nil {
		return nil, "", "", err
	}
	if extra := studyArgs(rest); len(extra) > 0 {
		return nil, "", "", usagef("sweep --spec %s: %q belongs in the study file; the command line gives only how it runs and prints (--jobs, --out, --continue, --shard, --json, --plot)", path, strings.Join(extra, " "))
	}
	return append(st.Args(), rest...), st.Name, st.SHA256, nil
}

// readSpec reads the study file of --spec, its faults worded as the
// command line's.
func readSpec(path string) (experiment.StudyFile, error) {
	if path == "" {
		return experiment.StudyFile{}, usagef("--spec: which file? --spec study.yaml")
	}
	st, err := experiment.ReadStudy(path, studyKey)
	switch {
	case errors.Is(err, experiment.ErrNotAFlagName):
		return st, usagef("--spec %v; a key is a flag of netemu sweep or of the workload without its dashes, like rtt or size", err)
	case err != nil:
		return st, usagef("--spec %v", err)
	}
	return st, nil
}

// studyKey refuses a study file's key that is a flag of how the sweep
// runs or prints, or of a file it writes: those the command line gives.
func studyKey(key string) error {
	if _, run := runFlags[key]; run {
		return fmt.Errorf("%s says how the sweep runs or prints, not what it measures; give --%s on the command line", key, key)
	}
	if specOutputs[key] {
		return fmt.Errorf("%s writes a file; a study file says what is measured, not where files go: give --%s on the command line", key, key)
	}
	return nil
}
