package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A value is its key's, whatever it looks like: each key is one
// argument "--key=values", so a value like --pcap=x never becomes a
// flag of its own; check sees each key with its values.
func TestStudyValuesStayValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	text := "workload: bulk\ntrace-once: --pcap=/tmp/victim\nrtt: [--out=x, 10ms]\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	checked := map[string][]string{}
	st, err := ReadStudy(path, func(key string, values []string) error {
		checked[key] = values
		return nil
	})
	want := []string{"bulk", "--trace-once=--pcap=/tmp/victim", "--rtt=--out=x,10ms"}
	if err != nil || !slices.Equal(st.Args(), want) {
		t.Fatalf("ReadStudy: %q, %v; want the arguments %q", st.Args(), err, want)
	}
	if !slices.Equal(checked["trace-once"], []string{"--pcap=/tmp/victim"}) || !slices.Equal(checked["rtt"], []string{"--out=x", "10ms"}) {
		t.Errorf("check saw %q; want each key with its values", checked)
	}
}
