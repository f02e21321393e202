package experiment

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// A sweep's results file (netemu sweep --out) holds what its output is
// made of: a header naming the study and the shard, then one outcome per
// run, in the order the runs are listed, one JSON line each. It grows a
// line at a time, one write each, so an interrupted sweep leaves complete
// lines (Sweep.Resume goes on from them), and MergeResults makes the
// outcomes of a whole sweep from the files of its shards.

// StudyID names what a sweep measures.
type StudyID struct {
	Args        []string `json:"args"` // the sweep's arguments without how it runs or prints
	Study       string   `json:"study,omitempty"`
	StudySHA256 string   `json:"study_sha256,omitempty"`
	// Inputs holds the SHA-256 of each file the sweep reads besides its
	// study (trace files), by the name its arguments give it.
	Inputs map[string]string `json:"inputs_sha256,omitempty"`
}

// ResultsHeader is a results file's first line.
type ResultsHeader struct {
	Format string `json:"netemu_sweep"` // resultsFormat
	StudyID
	Shard  int `json:"shard"`
	Shards int `json:"shards"`
	Runs   int `json:"runs"` // in this shard
}

const resultsFormat = "results v1"

// header is the header of the sweep's results file for its shard.
func (s *Sweep) header(runs int) ResultsHeader {
	return ResultsHeader{Format: resultsFormat, StudyID: s.Study, Shard: s.Shard, Shards: s.shards(), Runs: runs}
}

// SameStudy reports whether two headers are of the same study and
// sharding.
func (h ResultsHeader) SameStudy(o ResultsHeader) bool {
	return slices.Equal(h.Args, o.Args) && h.Study == o.Study && h.StudySHA256 == o.StudySHA256 && maps.Equal(h.Inputs, o.Inputs) && h.Shards == o.Shards
}

// InputsDiffer names the first file the sweeps of h and o read whose
// contents differ (h's value first), or returns "" when none does.
func (h ResultsHeader) InputsDiffer(o ResultsHeader) string {
	if maps.Equal(h.Inputs, o.Inputs) {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(h.Inputs)) {
		if o.Inputs[k] != h.Inputs[k] {
			return fmt.Sprintf("the file %s differs (sha256 %.12s… against %.12s…)", k, h.Inputs[k], o.Inputs[k])
		}
	}
	return "the files read differ"
}

// Describe names the study and the shard, for messages.
func (h ResultsHeader) Describe() string {
	if h.Study != "" {
		return fmt.Sprintf("the study %s (sha256 %.12s…), shard %d/%d", h.Study, h.StudySHA256, h.Shard, h.Shards)
	}
	return fmt.Sprintf("the sweep %q, shard %d/%d", strings.Join(h.Args, " "), h.Shard, h.Shards)
}

// maxResultLine bounds a line of a results file: a record with an
// explanation is long, but not this long. A longer line (a file that is
// not one, like /dev/zero) is refused once this much is read.
var maxResultLine = 64 << 20

// results is what a results file holds.
type results struct {
	header ResultsHeader
	ocs    []UnitOutcome
	end    int64 // where the last complete line ends
	cut    int   // the number of an unterminated last line, 0 if none
}

// readResults reads a results file from r, a line at a time: its header,
// and the outcome of each complete line with the byte offset where the
// last ends. An unterminated last line (a write an interruption cut
// short) is left out and its number given in cut; any other line that is
// not an outcome is refused, naming the file and the line. ctx's end
// stops the reading.
func readResults(ctx context.Context, path string, r io.Reader) (results, error) {
	var rs results
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for n := 1; ; n++ {
		if err := context.Cause(ctx); ctx.Err() != nil {
			return rs, err
		}
		line = line[:0]
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			line = append(line, chunk...)
			if err != bufio.ErrBufferFull {
				break
			}
			if len(line) > maxResultLine {
				return rs, inputErrorf("%s:%d: a line longer than %d MiB; this is not a results file of netemu sweep --out", path, n, maxResultLine>>20)
			}
		}
		if err == io.EOF {
			if len(line) > 0 {
				if n == 1 {
					return rs, inputErrorf("%s is not a results file of netemu sweep --out (its first line is not its header)", path)
				}
				rs.cut = n
			} else if n == 1 {
				return rs, inputErrorf("%s is empty, not a results file of netemu sweep --out", path)
			}
			return rs, nil
		}
		if err != nil {
			return rs, err
		}
		body := line[:len(line)-1]
		if n == 1 {
			if json.Unmarshal(body, &rs.header) != nil || rs.header.Format != resultsFormat {
				return rs, inputErrorf("%s is not a results file of netemu sweep --out (its first line is not its header)", path)
			}
		} else {
			var oc UnitOutcome
			if err := json.Unmarshal(body, &oc); err != nil {
				return rs, inputErrorf("%s:%d: damaged: the line is not a run's outcome (%v); only a last line cut short is left out, so the file is refused: mend or remove the line", path, n, err)
			}
			rs.ocs = append(rs.ocs, oc)
		}
		rs.end += int64(len(line))
	}
}

// readResultsFile reads the results file at path (readResults).
func readResultsFile(ctx context.Context, path string) (results, error) {
	f, err := os.Open(path)
	if err != nil {
		return results{}, err
	}
	defer f.Close()
	return readResults(ctx, path, f)
}

// resultsFile is an open results file, locked: one sweep writes it.
type resultsFile struct {
	f    *os.File
	path string
}

// openResults opens the results file at path for the units us of a
// sweep with header h: a new file, or with resume, the file of an
// earlier, interrupted run of the same sweep, cut after its last complete
// line. It returns the outcomes the file already holds. The file is
// locked while the sweep writes it: a second sweep on it is refused.
func openResults(ctx context.Context, path string, resume bool, h ResultsHeader, us []Unit) (*resultsFile, []UnitOutcome, error) {
	if _, err := os.Stat(path); err == nil {
		if !resume {
			return nil, nil, inputErrorf("--out %s exists; add --continue to go on from the runs it holds, or give another file", path)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return nil, nil, inputErrorf("--out %s: %v", path, err)
		}
		rf := &resultsFile{f, path}
		ocs, err := rf.resume(ctx, h, us)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return rf, ocs, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, nil, inputErrorf("--out %s: %v", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, nil, inputErrorf("--out %s: %v", path, err)
	}
	rf := &resultsFile{f, path}
	if err := rf.write(h); err != nil {
		f.Close()
		os.Remove(path)
		return nil, nil, err
	}
	return rf, nil, nil
}

// resume locks the file of an earlier run of the sweep with header h,
// checks that it holds the first of the units us, and cuts it after its
// last complete line, ready for the next.
func (r *resultsFile) resume(ctx context.Context, h ResultsHeader, us []Unit) ([]UnitOutcome, error) {
	if err := lockFile(r.f); err != nil {
		return nil, inputErrorf("--out %s: %v", r.path, err)
	}
	rs, err := readResults(ctx, r.path, r.f)
	if err != nil {
		return nil, err
	}
	if d := rs.header.InputsDiffer(h); d != "" && slices.Equal(rs.header.Args, h.Args) {
		return nil, inputErrorf("--continue: %s holds %s run with other inputs: %s; give another --out", r.path, rs.header.Describe(), d)
	}
	if !rs.header.SameStudy(h) || rs.header.Shard != h.Shard {
		return nil, inputErrorf("--continue: %s holds %s, not %s; give another --out", r.path, rs.header.Describe(), h.Describe())
	}
	if len(rs.ocs) > len(us) {
		return nil, inputErrorf("--continue: %s holds %d runs; this sweep has %d", r.path, len(rs.ocs), len(us))
	}
	for k, oc := range rs.ocs {
		if oc.Unit != us[k] {
			return nil, inputErrorf("--continue: %s: line %d is cell %d seed %d; this sweep's run %d is cell %d seed %d", r.path, k+2, oc.Cell, oc.Seed, k+1, us[k].Cell, us[k].Seed)
		}
	}
	if err := r.f.Truncate(rs.end); err != nil {
		return nil, fmt.Errorf("--continue: %w", err)
	}
	if _, err := r.f.Seek(rs.end, io.SeekStart); err != nil {
		return nil, fmt.Errorf("--continue: %w", err)
	}
	return rs.ocs, nil
}

// write appends one line, in one write: an interruption leaves whole
// lines.
func (r *resultsFile) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("--out %s: %w", r.path, err)
	}
	return nil
}

func (r *resultsFile) close() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("--out %s: %w", r.path, err)
	}
	return nil
}

// A StudyMismatchError is MergeResults' refusal of two files of
// different studies or shardings: Path holds Got, First holds Want.
type StudyMismatchError struct {
	Path, First string
	Got, Want   ResultsHeader
}

func (e *StudyMismatchError) Error() string {
	return fmt.Sprintf("%s holds %s; %s holds %s: parts of different studies", e.Path, e.Got.Describe(), e.First, e.Want.Describe())
}

// MergeResults reads the results files of a sweep's shards and returns
// the outcomes of the whole sweep in its order, with the shared header.
// Files of different studies (a *StudyMismatchError), a shard missing,
// given twice or unfinished are refused.
func MergeResults(ctx context.Context, paths []string) (ResultsHeader, []UnitOutcome, error) {
	var first ResultsHeader
	byShard := map[int]string{}
	var all []UnitOutcome
	for k, path := range paths {
		rs, err := readResultsFile(ctx, path)
		h, ocs := rs.header, rs.ocs
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return first, nil, inputErrorf("%s does not exist", path)
			}
			return first, nil, err
		}
		if k == 0 {
			first = h
		} else if !h.SameStudy(first) {
			return first, nil, &StudyMismatchError{Path: path, First: paths[0], Got: h, Want: first}
		}
		if other, ok := byShard[h.Shard]; ok {
			return first, nil, inputErrorf("%s and %s are both shard %d/%d; give each shard once", other, path, h.Shard, h.Shards)
		}
		byShard[h.Shard] = path
		if rs.cut > 0 && len(ocs) >= h.Runs {
			return first, nil, inputErrorf("%s:%d: an unterminated line after the shard's %d runs; the file is damaged", path, rs.cut, h.Runs)
		}
		if len(ocs) != h.Runs {
			return first, nil, inputErrorf("%s holds %d of shard %d/%d's %d runs: the shard did not finish; run it again with --continue", path, len(ocs), h.Shard, h.Shards, h.Runs)
		}
		all = append(all, ocs...)
	}
	var missing, given []string
	for i := range first.Shards {
		if _, ok := byShard[i]; ok {
			given = append(given, fmt.Sprintf("%d/%d", i, first.Shards))
		} else {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Shards))
		}
	}
	if len(missing) > 0 {
		return first, nil, inputErrorf("shard %s missing: the parts given are of shards %s", strings.Join(missing, ", "), strings.Join(given, ", "))
	}
	// The sweep's order: cell by cell, each cell's seeds in the order
	// they ran (a cell is in one shard, in order).
	slices.SortStableFunc(all, func(a, b UnitOutcome) int { return a.Cell - b.Cell })
	return first, all, nil
}

// Difference names what differs between the studies of h and o, h's
// value first, where SameStudy says they differ: the study file, its
// contents, an argument of the sweep (the workload, or a flag by its
// name with its value, "not given" where one sweep lacks it), a file the
// sweep reads, or the number of shards. isSwitch reports whether the
// flag --name takes no value (its value is then "on"); it is the
// command's knowledge, not the results file's.
func (h ResultsHeader) Difference(o ResultsHeader, isSwitch func(name string) bool) string {
	switch {
	case h.Study != o.Study:
		return fmt.Sprintf("the study file differs (%s against %s)", h.Study, o.Study)
	case h.StudySHA256 != o.StudySHA256:
		return fmt.Sprintf("the study file's contents differ (sha256 %.12s… against %.12s…)", h.StudySHA256, o.StudySHA256)
	case !slices.Equal(h.Args, o.Args):
		return argsDifference(h.Args, o.Args, isSwitch)
	case h.InputsDiffer(o) != "":
		return h.InputsDiffer(o)
	default:
		return fmt.Sprintf("the number of shards differs (%d against %d)", h.Shards, o.Shards)
	}
}

// argsDifference names the first argument whose value differs between
// the sweep arguments a and b, in a's order then b's, or both whole.
func argsDifference(a, b []string, isSwitch func(string) bool) string {
	va, vb := argValues(a, isSwitch), argValues(b, isSwitch)
	for _, k := range append(slices.Clone(va.order), vb.order...) {
		x, inA := va.values[k]
		y, inB := vb.values[k]
		if inA && inB && x == y {
			continue
		}
		if !inA {
			x = "not given"
		}
		if !inB {
			y = "not given"
		}
		return fmt.Sprintf("%s differs (%s against %s)", k, x, y)
	}
	return fmt.Sprintf("the sweep's arguments differ (%q against %q)", strings.Join(a, " "), strings.Join(b, " "))
}

// sweepArgs is a sweep's arguments read as what each names, in their
// order: values holds each name's last value.
type sweepArgs struct {
	order  []string
	values map[string]string
}

// argValues reads a sweep's arguments as what each names: "the workload"
// for the word that is not a flag, "--rtt" for a flag, with its value
// ("on" for a switch, as isSwitch tells).
func argValues(args []string, isSwitch func(string) bool) sweepArgs {
	v := sweepArgs{values: map[string]string{}}
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

// CheckMerged checks that ocs, the outcomes MergeResults returned, are
// the runs of the whole sweep s in its order (Sweep.AllUnits): the same
// number, each the unit the sweep has at its place. A mismatch (parts
// whose arguments now plan another sweep) is an *InputError.
func (s *Sweep) CheckMerged(ocs []UnitOutcome) error {
	us := s.AllUnits()
	if len(us) != len(ocs) {
		return inputErrorf("the parts hold %d runs; their sweep has %d", len(ocs), len(us))
	}
	for k, oc := range ocs {
		if oc.Unit != us[k] {
			return inputErrorf("run %d of the parts is cell %d seed %d; their sweep's is cell %d seed %d", k+1, oc.Cell, oc.Seed, us[k].Cell, us[k].Seed)
		}
	}
	return nil
}
