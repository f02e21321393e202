package link

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readDist reads an iproute2 .dist file: comment lines, then numbers.
func readDist(t *testing.T, path string) []int16 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("iproute2's tables are not installed here: %v", err)
	}
	defer f.Close()
	var out []int16
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, w := range strings.Fields(line) {
			v, err := strconv.Atoi(w)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, w, err)
			}
			out = append(out, int16(v))
		}
	}
	return out
}

// The tables netemu builds are the ones iproute2 installs for tc, entry
// for entry.
func TestDistributionTablesMatchIproute2(t *testing.T) {
	dirs, _ := filepath.Glob("/usr/lib/*/tc")
	dirs = append(dirs, "/usr/lib/tc", "/usr/lib64/tc")
	var dir string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "normal.dist")); err == nil {
			dir = d
			break
		}
	}
	if dir == "" {
		t.Skip("iproute2's distribution tables (normal.dist) are not installed here; apt-get install iproute2")
	}
	for _, d := range []Distribution{Normal, Pareto, ParetoNormal} {
		want := readDist(t, filepath.Join(dir, d.String()+".dist"))
		got := d.table()
		if len(got) != len(want) {
			t.Errorf("%s: %d entries, iproute2 has %d", d, len(got), len(want))
			continue
		}
		diffs := 0
		for i := range got {
			if got[i] != want[i] {
				if diffs < 5 {
					t.Errorf("%s[%d] = %d, iproute2 has %d", d, i, got[i], want[i])
				}
				diffs++
			}
		}
		if diffs > 0 {
			t.Errorf("%s: %d of %d entries differ", d, diffs, len(got))
		}
	}
}
