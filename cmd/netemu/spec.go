package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A study file describes a sweep, so that it is versioned and can run
// again: the workload, then any flag of netemu sweep by its name, a list
// for an axis:
//
//	workload: bulk
//	rtt: [10ms, 50ms, 100ms, 200ms]
//	rate: [5mbit, 10mbit, 50mbit]
//	loss: [0, 1%]
//	seeds: 1-20
//	size: 5MiB        # a flag of the workload
//
// netemu sweep --spec study.yaml reads it; the command line adds only
// how the sweep runs and prints (--jobs, --out, --continue, --shard,
// --json, --plot). The file's name and SHA-256 go into the records.

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

// readSpec reads a study file into sweep's arguments, with the file's
// name and its contents' SHA-256.
func readSpec(path string) (args []string, name, hash string, err error) {
	if path == "" {
		return nil, "", "", usagef("--spec: which file? --spec study.yaml")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", "", usagef("--spec %s: %v", path, errors.Unwrap(err))
	}
	sum := sha256.Sum256(b)
	bad := func(line int, format string, a ...any) error {
		return usagef("--spec %s:%d: %s", path, line, fmt.Sprintf(format, a...))
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return nil, "", "", usagef("--spec %s: %v", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, "", "", usagef("--spec %s: want a mapping of flag names to values, like \"workload: bulk\" and \"rtt: [10ms, 50ms]\"", path)
	}
	m := doc.Content[0]
	var workload string
	var flags []string
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := k.Value
		if seen[key] {
			return nil, "", "", bad(k.Line, "%s is given twice", key)
		}
		seen[key] = true
		var vals []string
		switch v.Kind {
		case yaml.ScalarNode:
			vals = []string{v.Value}
		case yaml.SequenceNode:
			for _, e := range v.Content {
				if e.Kind != yaml.ScalarNode {
					return nil, "", "", bad(e.Line, "%s: want a list of values, like [10ms, 50ms]", key)
				}
				vals = append(vals, e.Value)
			}
		default:
			return nil, "", "", bad(v.Line, "%s: want a value or a list of values, like [10ms, 50ms]", key)
		}
		if len(vals) == 0 {
			return nil, "", "", bad(v.Line, "%s: the list is empty", key)
		}
		switch _, run := runFlags[key]; {
		case key == "workload":
			if len(vals) != 1 {
				return nil, "", "", bad(v.Line, "workload: one workload per study")
			}
			workload = vals[0]
		case run:
			return nil, "", "", bad(k.Line, "%s says how the sweep runs or prints, not what it measures; give --%s on the command line", key, key)
		default:
			flags = append(flags, "--"+key, strings.Join(vals, ","))
		}
	}
	if workload == "" {
		return nil, "", "", usagef("--spec %s: which workload? add a line like \"workload: bulk\"", path)
	}
	return append([]string{workload}, flags...), filepath.Base(path), hex.EncodeToString(sum[:]), nil
}
