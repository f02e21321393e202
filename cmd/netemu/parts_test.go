package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/netemu/netemu/cli"
)

// runOK runs netemu and fails the test unless it exits 0.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runNetemu(args...)
	if code != 0 {
		t.Fatalf("netemu %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// A study run as 3 shards and merged prints the bytes the study prints
// run whole: table, JSON and figure. Two seeds make the summaries that
// merge must recompute from runs of several shards, as three did.
func TestShardsMergeToTheWholeSweep(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	grid := sweepArgs("--rate", "10mbit,5mbit", "--seeds", "1-2")
	whole := runOK(t, append(grid, "--plot", p("whole.svg"))...)
	wholeJSON := runOK(t, append(grid, "--json")...)
	var parts []string
	for i, jobs := range []string{"1", "2", "1"} {
		part := p("part-" + itoa(i) + ".jsonl")
		runOK(t, append(grid, "--shard", itoa(i)+"/3", "--out", part, "--jobs", jobs)...)
		parts = append(parts, part)
	}
	merged := runOK(t, append([]string{"merge", "--plot", p("merged.svg")}, parts...)...)
	mergedJSON := runOK(t, append([]string{"merge", "--json"}, parts[2], parts[0], parts[1])...)
	if merged != whole {
		t.Errorf("merged table:\n%s\nthe whole sweep's:\n%s", merged, whole)
	}
	if mergedJSON != wholeJSON {
		t.Errorf("merged JSON differs from the whole sweep's:\n%s\n%s", mergedJSON, wholeJSON)
	}
	a, _ := os.ReadFile(p("whole.svg"))
	b, _ := os.ReadFile(p("merged.svg"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("the merged figure (%d bytes) differs from the whole sweep's (%d bytes)", len(b), len(a))
	}
}

// merge refuses parts that do not make one sweep, in a line that names
// the part.
func TestMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	for i := range 2 {
		runOK(t, sweepArgs("--shard", itoa(i)+"/2", "--out", p("a"+itoa(i)))...)
	}
	runOK(t, sweepArgs("--rtt", "20ms", "--shard", "1/2", "--out", p("other"))...)
	b, _ := os.ReadFile(p("a1"))
	os.WriteFile(p("cut"), b[:len(b)-len(b)/3], 0o644)
	os.WriteFile(p("text"), []byte("hello\n"), 0o644)
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{"a0"}, "shard 1/2 missing: the parts given are of shards 0/2"},
		{[]string{"a0", "a1", "a1"}, "are both shard 1/2"},
		{[]string{"a0", "other"}, "parts of different studies, --rtt differs (20ms against 10ms,50ms)"},
		{[]string{"a0", "cut"}, "the shard did not finish; run it again with --continue"},
		{[]string{"a0", "text"}, "is not a results file of netemu sweep --out"},
		{[]string{"a0", "nothing"}, "does not exist"},
	} {
		args := []string{"merge"}
		for _, f := range c.files {
			args = append(args, p(f))
		}
		code, out, errOut := runNetemu(args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("merge %v: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", c.files, code, out, errOut, c.want)
		}
	}
}

// An interrupted sweep leaves whole lines, perhaps one cut short;
// --continue goes on from them and ends with the bytes of a sweep never
// interrupted, and prints its output.
func TestResume(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	grid := sweepArgs("--seeds", "1-2")
	wantOut := runOK(t, append(grid, "--out", full)...)
	want, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(want, []byte("\n"))
	for _, keep := range []int{1, 3, len(lines) - 2} {
		part := filepath.Join(dir, "part"+itoa(keep)+".jsonl")
		cut := bytes.Join(lines[:keep], nil)
		cut = append(cut, lines[keep][:len(lines[keep])/2]...) // a line cut short
		os.WriteFile(part, cut, 0o644)
		out := runOK(t, append(grid, "--out", part, "--continue", "--jobs", "2")...)
		got, _ := os.ReadFile(part)
		if !bytes.Equal(got, want) {
			t.Errorf("resumed after %d lines: the file differs from the uninterrupted sweep's:\n%s\nwant:\n%s", keep, got, want)
		}
		if out != wantOut {
			t.Errorf("resumed after %d lines: output\n%s\nwant\n%s", keep, out, wantOut)
		}
	}
	// A file that exists is not overwritten, and not resumed by another
	// sweep.
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(grid, "--out", full), "exists; add --continue"},
		{append(sweepArgs("--seeds", "1-3"), "--out", full, "--continue"), "give another --out"},
	} {
		code, _, errOut := runNetemu(c.args...)
		got, _ := os.ReadFile(full)
		if code != 2 || !strings.Contains(errOut, c.want) || !bytes.Equal(got, want) {
			t.Errorf("%v: exit %d, stderr %q, file changed %v; want exit 2 and %q", c.args, code, errOut, !bytes.Equal(got, want), c.want)
		}
	}
}

func TestShardBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	for _, c := range []struct {
		args []string
		env  []string
		want string
	}{
		{sweepArgs("--shard", "4/3", "--out", out), nil, `--shard "4/3": want i/n, shard i of n counted from 0`},
		{sweepArgs("--shard", "3/3"), nil, "0/3, 1/3 and 2/3"},
		{sweepArgs("--shard", "-1/2"), nil, "want i/n"},
		{sweepArgs("--shard", "half"), nil, "want i/n"},
		{sweepArgs("--continue"), nil, "--continue goes on from the results file of --out"},
		{sweepArgs("--out", filepath.Join(dir, "no", "r.jsonl")), nil, "does not exist"},
		{sweepArgs("--out", out), []string{"JOB_COMPLETION_INDEX", "1"}, "JOB_COMPLETIONS is not"},
		{sweepArgs("--out", out), []string{"JOB_COMPLETION_INDEX", "5", "JOB_COMPLETIONS", "3"}, "want an index from 0 to JOB_COMPLETIONS-1"},
		{[]string{"merge"}, nil, "which files?"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			for i := 0; i < len(c.env); i += 2 {
				t.Setenv(c.env[i], c.env[i+1])
			}
			code, stdout, errOut := runNetemu(c.args...)
			if code != 2 || stdout != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", code, stdout, errOut, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("bad input left %s behind", out)
			}
		})
	}
}

// In a pod of an Indexed Job, the shard comes from the environment.
func TestShardFromEnvironment(t *testing.T) {
	want := runOK(t, sweepArgs("--shard", "1/3")...)
	t.Setenv("JOB_COMPLETION_INDEX", "1")
	t.Setenv("JOB_COMPLETIONS", "3")
	code, got, errOut := runNetemu(sweepArgs()...)
	if code != 0 || got != want || !strings.Contains(errOut, "shard 1/3, from JOB_COMPLETION_INDEX") {
		t.Errorf("exit %d, stderr %q, output\n%s\nwant --shard 1/3's:\n%s", code, errOut, got, want)
	}
}

// A damaged line other than an unterminated last one is refused, by
// sweep --continue and by merge alike, naming the file and the line; the
// file is left as it was, and no run is measured again.
func TestResultsFileDamageRefused(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	grid := sweepArgs("--seeds", "1-2") // a header and 8 runs: line 3 is a run's
	runOK(t, append(grid, "--out", full)...)
	want, _ := os.ReadFile(full)
	lines := bytes.SplitAfter(want, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty piece after the last newline
	damaged := func(name string, k int, with string) string {
		ls := append([][]byte{}, lines...)
		ls[k] = []byte(with)
		path := filepath.Join(dir, name)
		os.WriteFile(path, bytes.Join(ls, nil), 0o644)
		return path
	}
	for _, c := range []struct {
		path, want string
	}{
		// Line 3 cut short, its newline kept (a bad copy, an editor).
		{damaged("cut3", 2, string(lines[2][:len(lines[2])/2])+"\n"), ":3: damaged"},
		// A garbage line at the end, terminated.
		{damaged("garbage", len(lines)-1, "garbage\n"), ":" + itoa(len(lines)) + ": damaged"},
	} {
		before, _ := os.ReadFile(c.path)
		code, out, errOut := runNetemu(append(grid, "--out", c.path, "--continue")...)
		after, _ := os.ReadFile(c.path)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.path+c.want) || !bytes.Equal(before, after) {
			t.Errorf("sweep --continue on %s: exit %d, stderr %q, file changed %v; want exit 2, one line naming %s%s, the file untouched", c.path, code, errOut, !bytes.Equal(before, after), c.path, c.want)
		}
		code, out, errOut = runNetemu("merge", c.path)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.path+c.want) {
			t.Errorf("merge %s: exit %d, stderr %q; want exit 2 and one line naming %s%s", c.path, code, errOut, c.path, c.want)
		}
	}
	// Every run there, then a fragment: merge refuses it too.
	frag := filepath.Join(dir, "frag")
	os.WriteFile(frag, append(append([]byte{}, want...), "{\"cell\""...), 0o644)
	if code, _, errOut := runNetemu("merge", frag); code != 2 || !strings.Contains(errOut, frag+":"+itoa(len(lines)+1)+": an unterminated line") {
		t.Errorf("merge of a complete part with a fragment after it: exit %d, stderr %q; want 2 naming line %d", code, errOut, len(lines)+1)
	}
}

// merge stops when interrupted (SIGTERM cancels the context): the
// status of the signal, no output.
func TestMergeInterrupted(t *testing.T) {
	part := filepath.Join(t.TempDir(), "p.jsonl")
	runOK(t, sweepArgs("--out", part)...)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&cli.SignalError{Sig: syscall.SIGTERM})
	var o, e strings.Builder
	if code := run(ctx, []string{"merge", part}, &o, &e); code != 128+int(syscall.SIGTERM) || o.Len() != 0 {
		t.Errorf("merge, interrupted: exit %d, stdout %q, stderr %q; want %d and no output", code, o.String(), e.String(), 128+int(syscall.SIGTERM))
	}
}

// A trace file the sweep reads is part of its study: a results file is
// not resumed after the trace changed.
func TestResumeRefusesAChangedTrace(t *testing.T) {
	dir := t.TempDir()
	tr, out := filepath.Join(dir, "a.trace"), filepath.Join(dir, "r.jsonl")
	os.WriteFile(tr, []byte("1\n"), 0o644)
	args := []string{"sweep", "bulk", "--size", "50KB", "--tcp", "netemu", "--trace-down", tr, "--out", out}
	runOK(t, args...)
	before, _ := os.ReadFile(out)
	runOK(t, append(args, "--continue")...) // the same trace: nothing left to run
	os.WriteFile(tr, []byte("1\n1\n"), 0o644)
	code, _, errOut := runNetemu(append(args, "--continue")...)
	after, _ := os.ReadFile(out)
	if code != 2 || !strings.Contains(errOut, "the file "+tr+" differs") || !bytes.Equal(before, after) {
		t.Errorf("--continue after the trace changed: exit %d, stderr %q, file changed %v; want exit 2 naming the trace, the file untouched", code, errOut, !bytes.Equal(before, after))
	}
}
