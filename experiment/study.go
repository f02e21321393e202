package experiment

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
// again: the workload, then the flags that shape its runs (the command
// that reads it says which) by their names without their dashes, a list
// for an axis:
//
//	workload: bulk
//	rtt: [10ms, 50ms, 100ms, 200ms]
//	rate: [5mbit, 10mbit, 50mbit]
//	loss: [0, 1%]
//	seeds: 1-20
//	size: 5MiB        # a flag of the workload
//
// ReadStudy reads one into the sweep's arguments; the file's name and
// SHA-256 go into the records (StudyID, Record.Study). A study file
// someone sent can run without a look: it writes no file and picks no
// path to write to, since only the command line gives those.

// Bounds on a sweep, checked before anything is built: a typo like
// --seeds 1-1000000 should not start a week of runs.
const (
	MaxSeeds = 100_000   // seeds of one sweep
	MaxCells = 100_000   // cells: the product of the lists' lengths and the workload's variants
	MaxRuns  = 1_000_000 // runs: cells × seeds
)

// maxStudyBytes bounds a study file.
const maxStudyBytes = 4 << 20

// A StudyFile is a study file read: the sweep it describes as the
// arguments of the sweep's command, and what names the file in records.
// Workload is never empty and is a name, never a flag. Flags holds one
// argument per key, "--key=values" with the values joined by commas, in
// the file's order, each key once: a value is always its key's, so one
// that looks like a flag (trace-once: --pcap=x) cannot become one.
type StudyFile struct {
	Name     string // the file's base name
	SHA256   string // its contents' SHA-256, hex
	Workload string
	Flags    []string
}

// Args is the sweep's arguments: the workload, then the flags.
func (s StudyFile) Args() []string { return append([]string{s.Workload}, s.Flags...) }

// A StudyError is a study file's fault: the file, the line (0 when the
// fault is the file's as a whole: it cannot be read, is not YAML, or
// lacks the workload) and what is wrong. It says nothing of how the
// file was given; a command adds that.
type StudyError struct {
	Path string
	Line int
	Err  error
}

func (e *StudyError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *StudyError) Unwrap() error { return e.Err }

// ErrNotAFlagName is a study file's key that cannot be a flag's name
// (StudyError.Err wraps it, after the key): only lower-case letters,
// digits and inner dashes are.
var ErrNotAFlagName = errors.New("is not a flag's name")

// ErrNoWorkload is a study file without its workload line.
var ErrNoWorkload = errors.New(`which workload? add a line like "workload: bulk"`)

// ReadStudy reads the study file at path: one YAML document, a mapping
// of keys to a value or a list of values, at most 4 MiB long.
// The key "workload" names the workload, once; each other key is given
// to check with its values, which returns why the sweep does not take
// it in a study (it names an output file, or says how the sweep runs; a
// switch's value is not a boolean) or nil. Every fault is a *StudyError
// with the line it is on; no key that is not a flag's name, and no value
// with a comma but a plain list like 10ms,50ms, reaches the arguments.
func ReadStudy(path string, check func(key string, values []string) error) (StudyFile, error) {
	b, err := readStudyFile(path)
	if err != nil {
		return StudyFile{}, err
	}
	m, err := decodeStudy(path, b)
	if err != nil {
		return StudyFile{}, err
	}
	sum := sha256.Sum256(b)
	s := StudyFile{Name: filepath.Base(path), SHA256: hex.EncodeToString(sum[:])}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := k.Value
		if !validFlagName(key) {
			return StudyFile{}, studyErrorf(path, k.Line, "%q %w", key, ErrNotAFlagName)
		}
		if seen[key] {
			return StudyFile{}, studyErrorf(path, k.Line, "%s is given twice", key)
		}
		seen[key] = true
		vals, err := studyValues(path, key, v)
		if err != nil {
			return StudyFile{}, err
		}
		if key == "workload" {
			if len(vals) != 1 {
				return StudyFile{}, studyErrorf(path, v.Line, "workload: one workload per study")
			}
			if !validFlagName(vals[0]) {
				return StudyFile{}, studyErrorf(path, v.Line, "workload: %q is not a workload's name; write one like \"workload: bulk\"", vals[0])
			}
			s.Workload = vals[0]
			continue
		}
		if err := check(key, vals); err != nil {
			return StudyFile{}, &StudyError{path, k.Line, err}
		}
		s.Flags = append(s.Flags, "--"+key+"="+strings.Join(vals, ","))
	}
	if s.Workload == "" {
		return StudyFile{}, &StudyError{path, 0, ErrNoWorkload}
	}
	return s, nil
}

// validFlagName reports whether key can be a flag's name: lower-case
// letters, digits and inner dashes, as every netemu flag and workload
// is. Anything else (an "=", a leading dash, a space) would let the key
// smuggle a flag or a value into the arguments.
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

// studyErrorf is a *StudyError at line of the study file path.
func studyErrorf(path string, line int, format string, a ...any) error {
	return &StudyError{path, line, fmt.Errorf(format, a...)}
}

// readStudyFile reads the study file path, of at most maxStudyBytes.
func readStudyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &StudyError{path, 0, errors.Unwrap(err)}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStudyBytes+1))
	if err != nil {
		return nil, &StudyError{path, 0, err}
	}
	if len(b) > maxStudyBytes {
		return nil, studyErrorf(path, 0, "longer than %d MiB; a study file lists at most %d cells' values", maxStudyBytes>>20, MaxCells)
	}
	return b, nil
}

// decodeStudy parses b, the study file path, as one YAML document and
// returns its mapping of keys to values.
func decodeStudy(path string, b []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return nil, studyErrorf(path, 0, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var second yaml.Node
	if err := dec.Decode(&second); err != io.EOF {
		if err != nil {
			return nil, studyErrorf(path, 0, "after the first document: %s; a study file is one YAML document", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return nil, studyErrorf(path, second.Line, "a second YAML document; a study file is one document: remove the \"---\" and what follows, or make it a study file of its own")
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, studyErrorf(path, 0, "want a mapping of flag names to values, like \"workload: bulk\" and \"rtt: [10ms, 50ms]\"")
	}
	return doc.Content[0], nil
}

// studyValues are the values the study file path gives key in v, at
// least one. A plain scalar is what the command line takes: 10ms,50ms is
// a list, as --rtt 10ms,50ms is. A quoted scalar and an element of a
// list are one value each, so they hold no comma.
func studyValues(path, key string, v *yaml.Node) ([]string, error) {
	var vals []string
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 && strings.Contains(v.Value, ",") {
			return nil, studyErrorf(path, v.Line, "%s: %q is quoted, so it is one value, and a value holds no comma; for a list write %s: [%s]", key, v.Value, key, strings.Join(strings.Split(v.Value, ","), ", "))
		}
		vals = []string{v.Value}
	case yaml.SequenceNode:
		if len(v.Content) > MaxCells {
			return nil, studyErrorf(path, v.Line, "%s: %d values; a sweep has at most %d cells", key, len(v.Content), MaxCells)
		}
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode {
				return nil, studyErrorf(path, e.Line, "%s: want a list of values, like [10ms, 50ms]", key)
			}
			if strings.Contains(e.Value, ",") {
				return nil, studyErrorf(path, e.Line, "%s: %q: an element of a list is one value, and a value holds no comma", key, e.Value)
			}
			vals = append(vals, e.Value)
		}
	default:
		return nil, studyErrorf(path, v.Line, "%s: want a value or a list of values, like [10ms, 50ms]", key)
	}
	if len(vals) == 0 {
		return nil, studyErrorf(path, v.Line, "%s: the list is empty", key)
	}
	return vals, nil
}
