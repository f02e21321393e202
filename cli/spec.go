package cli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/netemu/netemu/experiment"
)

// A study file (experiment.ReadStudy) describes a sweep, so that it is
// versioned and can run again: the workload, then the flags that shape
// its runs by name, a list for an axis. netemu sweep --spec study.yaml
// reads it; the command line adds only how the sweep runs and what it
// writes (commandLineOnly). The file's name and SHA-256 go into the
// records.

// studyGroups are the groups of shared flags a study file may give:
// they shape the runs (the link, its impairments, the TCP, the seed, the
// backend). With them a study gives --seeds and the workload's own
// flags; every other shared flag (a file the sweep writes, how it runs
// or prints) only the command line gives, so that running a study
// someone sent writes nothing but what the command line says.
var studyGroups = []*Group{&LinkGroup, &ImpairGroup, &TopologyGroup, &KernelGroup}

// groupOf is the group of the shared flag --name; nil if it is none.
func groupOf(name string) *Group {
	for _, g := range Groups {
		for _, f := range g.flags {
			if f.name == name {
				return g
			}
		}
	}
	return nil
}

// inStudy reports whether a study file may give --name: a shared flag
// of studyGroups, --seeds, or what is no shared flag (a workload's flag;
// parsing refuses the rest as unknown).
func inStudy(name string) bool {
	g := groupOf(name)
	return g == nil || name == "seeds" || slices.Contains(studyGroups, g)
}

// commandLineOnly lists the flags of the sweep command c that a study
// file does not give, as --name, for messages.
func commandLineOnly(c *Command) string {
	var names []string
	for _, g := range Groups {
		for _, f := range g.flags {
			if !inStudy(f.name) && f.name != "spec" && c.Takes(f.name) {
				names = append(names, "--"+f.name)
			}
		}
	}
	return strings.Join(names, ", ")
}

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

// WithStudy replaces --spec in args, the arguments of the sweep command
// c, when given, by the arguments of its study file, and returns those
// with the file's name and SHA-256 (both "" without --spec). The rest of
// args may only say how the sweep runs and what it writes.
func WithStudy(c *Command, args []string) (_ []string, study, hash string, err error) {
	path, rest, ok := specFlag(args)
	if !ok {
		return args, "", "", nil
	}
	st, err := readSpec(path)
	if err != nil {
		return nil, "", "", err
	}
	if extra := studyPart(rest); len(extra) > 0 {
		return nil, "", "", Usagef("sweep --spec %s: %q belongs in the study file; the command line gives only how it runs and what it writes (%s)", path, strings.Join(extra, " "), commandLineOnly(c))
	}
	return append(st.Args(), rest...), st.Name, st.SHA256, nil
}

// studyPart returns what of args a study file gives (a word, a flag of
// inStudy), each flag with its value.
func studyPart(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, hasVal := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		isFlag := strings.HasPrefix(args[i], "-")
		n := 1 // arguments this one spans: 2 for a flag and its value
		if isFlag && !hasVal && !IsSwitch(name) && i+1 < len(args) {
			n = 2
		}
		if !isFlag || inStudy(name) {
			out = append(out, args[i:i+n]...)
		}
		i += n - 1
	}
	return out
}

// readSpec reads the study file of --spec, its faults worded as the
// command line's.
func readSpec(path string) (experiment.StudyFile, error) {
	if path == "" {
		return experiment.StudyFile{}, Usagef("--spec: which file? --spec study.yaml")
	}
	st, err := experiment.ReadStudy(path, studyKey)
	switch {
	case errors.Is(err, experiment.ErrNotAFlagName):
		return st, Usagef("--spec %v; a key is a flag of netemu sweep or of the workload without its dashes, like rtt or size", err)
	case err != nil:
		return st, Usagef("--spec %v", err)
	}
	return st, nil
}

// studyKey refuses a study file's key that only the command line gives
// (a file the sweep writes, how it runs or prints), and a switch's value
// that is not true or false. A key that is no flag at all, parsing
// refuses as unknown.
func studyKey(key string, values []string) error {
	if !inStudy(key) {
		if groupOf(key) == &OutputGroup && key != "json" {
			return fmt.Errorf("%s writes a file; a study file says what is measured, not where files go: give --%s on the command line", key, key)
		}
		return fmt.Errorf("%s says how the sweep runs or prints, not what it measures; give --%s on the command line", key, key)
	}
	if IsSwitch(key) {
		if _, err := strconv.ParseBool(values[0]); err != nil || len(values) != 1 {
			return fmt.Errorf("%s is a switch: want %s: true or %s: false, not %q", key, key, key, strings.Join(values, ","))
		}
	}
	return nil
}
