package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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

// maxSpecBytes bounds a study file.
const maxSpecBytes = 4 << 20

// specOutputs are the flags that write files, which a study file does not
// give: running a study someone sent writes nothing but what the command
// line says.
var specOutputs = map[string]bool{"pcap": true, "timeline": true, "waterfall": true}

// validFlagName reports whether key can be a flag's name: lower-case
// letters, digits and inner dashes, as every netemu flag is. Anything
// else (an "=", a leading dash, a space) would let the key smuggle a
// flag or a value onto the command line.
func validFlagName(key string) bool {
	if key == "" || key[0] == '-' || key[len(key)-1] == '-' {
		return false
	}
	for _, r := range key {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-') {
			return false
		}
	}
	return true
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

// readSpec reads a study file into sweep's arguments, with the file's
// name and its contents' SHA-256.
func readSpec(path string) (args []string, name, hash string, err error) {
	if path == "" {
		return nil, "", "", usagef("--spec: which file? --spec study.yaml")
	}
	b, err := readSpecFile(path)
	if err != nil {
		return nil, "", "", err
	}
	sum := sha256.Sum256(b)
	m, err := decodeSpec(path, b)
	if err != nil {
		return nil, "", "", err
	}
	var workload string
	var flags []string
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := k.Value
		if !validFlagName(key) {
			return nil, "", "", specError(path, k.Line, "%q is not a flag's name; a key is a flag of netemu sweep or of the workload without its dashes, like rtt or size", key)
		}
		if seen[key] {
			return nil, "", "", specError(path, k.Line, "%s is given twice", key)
		}
		seen[key] = true
		vals, err := specValues(path, key, v)
		if err != nil {
			return nil, "", "", err
		}
		switch _, run := runFlags[key]; {
		case key == "workload":
			if len(vals) != 1 {
				return nil, "", "", specError(path, v.Line, "workload: one workload per study")
			}
			workload = vals[0]
		case run:
			return nil, "", "", specError(path, k.Line, "%s says how the sweep runs or prints, not what it measures; give --%s on the command line", key, key)
		case specOutputs[key]:
			return nil, "", "", specError(path, k.Line, "%s writes a file; a study file says what is measured, not where files go: give --%s on the command line", key, key)
		default:
			flags = append(flags, "--"+key, strings.Join(vals, ","))
		}
	}
	if workload == "" {
		return nil, "", "", usagef("--spec %s: which workload? add a line like \"workload: bulk\"", path)
	}
	return append([]string{workload}, flags...), filepath.Base(path), hex.EncodeToString(sum[:]), nil
}

// specError is a usage error at line of the study file path.
func specError(path string, line int, format string, a ...any) error {
	return usagef("--spec %s:%d: %s", path, line, fmt.Sprintf(format, a...))
}

// readSpecFile reads the study file path, of at most maxSpecBytes.
func readSpecFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--spec %s: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSpecBytes+1))
	if err != nil {
		return nil, usagef("--spec %s: %v", path, err)
	}
	if len(b) > maxSpecBytes {
		return nil, usagef("--spec %s: longer than %d MiB; a study file lists at most %d cells' values", path, maxSpecBytes>>20, maxCells)
	}
	return b, nil
}

// decodeSpec parses b, the study file path, as one YAML document and
// returns its mapping of flag names to values.
func decodeSpec(path string, b []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return nil, usagef("--spec %s: %v", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var second yaml.Node
	if err := dec.Decode(&second); err != io.EOF {
		line := second.Line
		if err != nil {
			return nil, usagef("--spec %s: after the first document: %v; a study file is one YAML document", path, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return nil, specError(path, line, "a second YAML document; a study file is one document: remove the \"---\" and what follows, or make it a study file of its own")
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, usagef("--spec %s: want a mapping of flag names to values, like \"workload: bulk\" and \"rtt: [10ms, 50ms]\"", path)
	}
	return doc.Content[0], nil
}

// specValues are the values the study file path gives key in v, at
// least one. A plain scalar is what the command line takes: 10ms,50ms is
// a list, as --rtt 10ms,50ms is. A quoted scalar and an element of a
// list are one value each, so they hold no comma.
func specValues(path, key string, v *yaml.Node) ([]string, error) {
	var vals []string
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 && strings.Contains(v.Value, ",") {
			return nil, specError(path, v.Line, "%s: %q is quoted, so it is one value, and a value holds no comma; for a list write %s: [%s]", key, v.Value, key, strings.Join(strings.Split(v.Value, ","), ", "))
		}
		vals = []string{v.Value}
	case yaml.SequenceNode:
		if len(v.Content) > maxCells {
			return nil, specError(path, v.Line, "%s: %d values; a sweep has at most %d cells", key, len(v.Content), maxCells)
		}
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode {
				return nil, specError(path, e.Line, "%s: want a list of values, like [10ms, 50ms]", key)
			}
			if strings.Contains(e.Value, ",") {
				return nil, specError(path, e.Line, "%s: %q: an element of a list is one value, and a value holds no comma", key, e.Value)
			}
			vals = append(vals, e.Value)
		}
	default:
		return nil, specError(path, v.Line, "%s: want a value or a list of values, like [10ms, 50ms]", key)
	}
	if len(vals) == 0 {
		return nil, specError(path, v.Line, "%s: the list is empty", key)
	}
	return vals, nil
}
