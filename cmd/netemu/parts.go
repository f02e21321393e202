package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/netemu/netemu/workloads"
)

// A sweep's results file (--out) holds what its output is made of: a
// header naming the study and the shard, then one outcome per run, in
// the order the runs are listed, one JSON line each. It grows a line at
// a time, so an interrupted sweep leaves complete lines (--continue goes on
// from them), and netemu merge makes the output of a whole sweep from
// the files of its shards.

// partHeader is the results file's first line.
type partHeader struct {
	Format      string   `json:"netemu_sweep"` // partFormat
	Args        []string `json:"args"`         // the study: the sweep's arguments without how it runs or prints
	Study       string   `json:"study,omitempty"`
	StudySHA256 string   `json:"study_sha256,omitempty"`
	Shard       int      `json:"shard"`
	Shards      int      `json:"shards"`
	Runs        int      `json:"runs"` // in this shard
}

const partFormat = "results v1"

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

// header is the header of the sweep's results file for its shard.
func (s *sweep) header(runs int) partHeader {
	return partHeader{Format: partFormat, Args: s.study, Study: s.o.study, StudySHA256: s.o.studyHash,
		Shard: s.shard, Shards: s.shards, Runs: runs}
}

// sameStudy reports whether two headers are of the same study and
// sharding.
func (h partHeader) sameStudy(o partHeader) bool {
	return slices.Equal(h.Args, o.Args) && h.Study == o.Study && h.StudySHA256 == o.StudySHA256 && h.Shards == o.Shards
}

// difference names what differs between the studies of two headers (h's
// value first) where sameStudy says they differ: the study file, its
// contents, a flag of the sweep, or the number of shards.
func (h partHeader) difference(o partHeader) string {
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

func (h partHeader) describe() string {
	if h.Study != "" {
		return fmt.Sprintf("the study %s (sha256 %.12s…), shard %d/%d", h.Study, h.StudySHA256, h.Shard, h.Shards)
	}
	return fmt.Sprintf("the sweep %q, shard %d/%d", strings.Join(h.Args, " "), h.Shard, h.Shards)
}

// maxResultLine bounds a line of a results file: a record with an
// explanation is long, but not this long. A longer line (a file that is
// not one, like /dev/zero) is refused once this much is read. A variable
// only so that a test can lower it.
var maxResultLine = 64 << 20

// part is what a results file holds.
type part struct {
	header partHeader
	ocs    []outcome
	end    int64 // where the last complete line ends
	cut    int   // the number of an unterminated last line, 0 if none
}

// readPart reads a results file from r, a line at a time: its header,
// and the outcome of each complete line with the byte offset where the
// last ends. An unterminated last line (a write an interruption cut
// short) is left out and its number given in cut; any other line that is
// not an outcome is refused, naming the file and the line. ctx's end
// stops the reading.
func readPart(ctx context.Context, path string, r io.Reader) (part, error) {
	var pt part
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for n := 1; ; n++ {
		if err := context.Cause(ctx); ctx.Err() != nil {
			return pt, err
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
				return pt, usagef("%s:%d: a line longer than %d MiB; this is not a results file of netemu sweep --out", path, n, maxResultLine>>20)
			}
		}
		if err == io.EOF {
			if len(line) > 0 {
				if n == 1 {
					return pt, usagef("%s is not a results file of netemu sweep --out (its first line is not its header)", path)
				}
				pt.cut = n
			} else if n == 1 {
				return pt, usagef("%s is empty, not a results file of netemu sweep --out", path)
			}
			return pt, nil
		}
		if err != nil {
			return pt, err
		}
		body := line[:len(line)-1]
		if n == 1 {
			if json.Unmarshal(body, &pt.header) != nil || pt.header.Format != partFormat {
				return pt, usagef("%s is not a results file of netemu sweep --out (its first line is not its header)", path)
			}
		} else {
			var oc outcome
			if err := json.Unmarshal(body, &oc); err != nil {
				return pt, usagef("%s:%d: damaged: the line is not a run's outcome (%v); only a last line cut short is left out, so the file is refused: mend or remove the line", path, n, err)
			}
			pt.ocs = append(pt.ocs, oc)
		}
		pt.end += int64(len(line))
	}
}

// readPartFile reads the results file at path (readPart).
func readPartFile(ctx context.Context, path string) (part, error) {
	f, err := os.Open(path)
	if err != nil {
		return part{}, err
	}
	defer f.Close()
	return readPart(ctx, path, f)
}

// resultsFile is an open --out file, locked: one sweep writes it.
type resultsFile struct {
	f    *os.File
	path string
}

// openResults opens the --out file for this sweep's units: a new file,
// or with --continue, the file of an earlier, interrupted run of the same
// sweep, cut after its last complete line. It returns the outcomes the
// file already holds. The file is locked while the sweep writes it: a
// second sweep on it is refused.
func (s *sweep) openResults(ctx context.Context, us []unit) (*resultsFile, []outcome, error) {
	path := s.o.out
	h := s.header(len(us))
	if _, err := os.Stat(path); err == nil {
		if !s.o.resume {
			return nil, nil, usagef("--out %s exists; add --continue to go on from the runs it holds, or give another file", path)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return nil, nil, usagef("--out %s: %v", path, err)
		}
		if err := lockFile(f); err != nil {
			f.Close()
			return nil, nil, usagef("--out %s: %v", path, err)
		}
		pt, err := readPart(ctx, path, f)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		got, ocs, end := pt.header, pt.ocs, pt.end
		if !got.sameStudy(h) || got.Shard != h.Shard {
			f.Close()
			return nil, nil, usagef("--continue: %s holds %s, not %s; give another --out", path, got.describe(), h.describe())
		}
		if len(ocs) > len(us) {
			f.Close()
			return nil, nil, usagef("--continue: %s holds %d runs; this sweep has %d", path, len(ocs), len(us))
		}
		for k, oc := range ocs {
			if oc.unit != us[k] {
				f.Close()
				return nil, nil, usagef("--continue: %s: line %d is cell %d seed %d; this sweep's run %d is cell %d seed %d", path, k+2, oc.Cell, oc.Seed, k+1, us[k].Cell, us[k].Seed)
			}
		}
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("--continue: %w", err)
		}
		if _, err := f.Seek(end, io.SeekStart); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("--continue: %w", err)
		}
		return &resultsFile{f, path}, ocs, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, nil, usagef("--out %s: %v", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, nil, usagef("--out %s: %v", path, err)
	}
	rf := &resultsFile{f, path}
	if err := rf.write(h); err != nil {
		f.Close()
		os.Remove(path)
		return nil, nil, err
	}
	return rf, nil, nil
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

// shardCells lists the cells of shard i of n: every n-th, from cell i,
// so that each shard gets its share of the short and the long cells.
func shardCells(cells, i, n int) []int {
	var out []int
	for c := i; c < cells; c += n {
		out = append(out, c)
	}
	return out
}

// mergeParts reads the results files of a sweep's shards and returns the
// outcomes of the whole sweep in its order, with the shared header.
func mergeParts(ctx context.Context, paths []string) (partHeader, []outcome, error) {
	var first partHeader
	byShard := map[int]string{}
	var all []outcome
	for k, path := range paths {
		pt, err := readPartFile(ctx, path)
		h, ocs := pt.header, pt.ocs
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return first, nil, usagef("merge: %s does not exist", path)
			}
			var ue *usageError
			if errors.As(err, &ue) {
				return first, nil, usagef("merge: %v", err)
			}
			if ctx.Err() != nil {
				return first, nil, err
			}
			return first, nil, fmt.Errorf("merge: %w", err)
		}
		if k == 0 {
			first = h
		} else if !h.sameStudy(first) {
			return first, nil, usagef("merge: %s holds %s; %s holds %s: parts of different studies, %s", path, h.describe(), paths[0], first.describe(), h.difference(first))
		}
		if other, ok := byShard[h.Shard]; ok {
			return first, nil, usagef("merge: %s and %s are both shard %d/%d; give each shard once", other, path, h.Shard, h.Shards)
		}
		byShard[h.Shard] = path
		if pt.cut > 0 && len(ocs) >= h.Runs {
			return first, nil, usagef("merge: %s:%d: an unterminated line after the shard's %d runs; the file is damaged", path, pt.cut, h.Runs)
		}
		if len(ocs) != h.Runs {
			return first, nil, usagef("merge: %s holds %d of shard %d/%d's %d runs: the shard did not finish; run it again with --continue", path, len(ocs), h.Shard, h.Shards, h.Runs)
		}
		all = append(all, ocs...)
	}
	var missing []string
	for i := range first.Shards {
		if _, ok := byShard[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Shards))
		}
	}
	if len(missing) > 0 {
		return first, nil, usagef("merge: shard %s missing: the parts given are of shards %s", strings.Join(missing, ", "), shardList(byShard, first.Shards))
	}
	// The sweep's order: cell by cell, each cell's seeds in the order
	// they ran (a cell is in one shard, in order).
	slices.SortStableFunc(all, func(a, b outcome) int { return a.Cell - b.Cell })
	return first, all, nil
}

func shardList(m map[int]string, n int) string {
	var s []string
	for i := range n {
		if _, ok := m[i]; ok {
			s = append(s, fmt.Sprintf("%d/%d", i, n))
		}
	}
	return strings.Join(s, ", ")
}
