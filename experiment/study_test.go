package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A study file is the sweep's arguments in its order, with its name and
// hash; check's refusal and every fault of the file come back at their
// line.
func TestReadStudy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	text := "# a study\nrtt: [10ms, 50ms]\nworkload: bulk\nloss: 0,1%\n"
	st, err := ReadStudy(write("s.yaml", text), func(string, []string) error { return nil })
	sum := sha256.Sum256([]byte(text))
	want := []string{"bulk", "--rtt=10ms,50ms", "--loss=0,1%"}
	if err != nil || !slices.Equal(st.Args(), want) || st.Name != "s.yaml" || st.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("ReadStudy: %+v, %v; want the arguments %q, the name s.yaml and the contents' SHA-256", st, err, want)
	}
	refuse := func(key string, _ []string) error {
		if key == "jobs" {
			return errors.New("not in a study")
		}
		return nil
	}
	for _, c := range []struct {
		text string
		line int
		is   error
		want string
	}{
		{"workload: bulk\njobs: 2\n", 2, nil, "not in a study"},
		{"workload: bulk\n\"out=x\": 1\n", 2, ErrNotAFlagName, `"out=x" is not a flag's name`},
		{"rtt: 10ms\n", 0, ErrNoWorkload, "which workload?"},
		{"workload: bulk\nrtt: \"1ms,2ms\"\n", 2, nil, "is quoted, so it is one value"},
		{"workload: bulk\n---\nrtt: 1ms\n", 2, nil, "a second YAML document"},
		{"workload: --pcap=x\n", 1, nil, `"--pcap=x" is not a workload's name`},
	} {
		_, err := ReadStudy(write("f.yaml", c.text), refuse)
		var se *StudyError
		if !errors.As(err, &se) || se.Line != c.line || c.is != nil && !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want a StudyError at line %d containing %q", c.text, err, c.line, c.want)
		}
	}
}

func TestParseSeeds(t *testing.T) {
	for _, c := range []struct {
		v    string
		want string // the seeds, or the error
	}{
		{"3", "[1 2 3]"},
		{"4-6", "[4 5 6]"},
		{" 7 - 7 ", "[7]"},
		{"0", `"0": want a count like 20`},
		{"6-4", `"6-4": want a count`},
		{"1-100001", `"1-100001" is 100001 seeds; want at most 100000`},
	} {
		seeds, err := ParseSeeds(c.v)
		got := fmt.Sprint(seeds)
		var ie *InputError
		if err != nil && errors.As(err, &ie) {
			got = err.Error()
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %s", c.v, seeds, err, c.want)
		}
	}
}

// Difference names the first flag whose value differs, a switch with
// no value of its own, and a flag one sweep lacks.
func TestDifference(t *testing.T) {
	isSwitch := func(name string) bool { return name == "timings" }
	h := func(args ...string) ResultsHeader { return ResultsHeader{StudyID: StudyID{Args: args}, Shards: 2} }
	for _, c := range []struct {
		a, b ResultsHeader
		want string
	}{
		{h("page", "--rtt", "10ms"), h("page", "--rtt", "20ms"), "--rtt differs (10ms against 20ms)"},
		{h("page", "--timings", "--rtt", "10ms"), h("page", "--rtt", "10ms"), "--timings differs (on against not given)"},
		{h("page"), h("bulk"), "the workload differs (page against bulk)"},
		{h("page", "--rtt=1ms"), h("page", "--rtt", "1ms"), "the sweep's arguments differ"},
		{h("page"), ResultsHeader{StudyID: StudyID{Args: []string{"page"}}, Shards: 3}, "the number of shards differs (2 against 3)"},
	} {
		if got := c.a.Difference(c.b, isSwitch); !strings.HasPrefix(got, c.want) {
			t.Errorf("%q against %q: %q; want %q", c.a.Args, c.b.Args, got, c.want)
		}
	}
}
