package netemu_test

import (
	"bufio"
	"go/build"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/netemu/netemu"

// layers reads the layer table of docs/ARCHITECTURE.md: package → layer.
func layers(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile(`^\| (\d+) \| (.+) \|$`)
	out := map[string]int{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		m := row.FindStringSubmatch(s.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		for _, p := range strings.Split(m[2], ",") {
			out[strings.TrimSpace(p)] = n
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/ARCHITECTURE.md has no layer table")
	}
	return out
}

// Every package of the module is in the layer table, and imports (test
// files' included) only packages of lower layers.
func TestLayers(t *testing.T) {
	layer := layers(t)
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() && path != "." {
			// A directory with a go.mod of its own is another module
			// (examples/raft, which keeps raft out of netemu's): not
			// this one's layers.
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if !d.IsDir() || path == "." {
			return nil
		}
		ctx := build.Default
		ctx.GOOS = "linux" // every file, kernel mode's included
		pkg, err := ctx.ImportDir(path, build.ImportComment)
		if _, ok := err.(*build.NoGoError); ok {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.ToSlash(path)
		seen[name] = true
		own, ok := layer[name]
		if !ok {
			t.Errorf("package %s is not in the layer table of docs/ARCHITECTURE.md", name)
			return nil
		}
		imports := append(append(append([]string{}, pkg.Imports...), pkg.TestImports...), pkg.XTestImports...)
		for _, imp := range imports {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok || dep == name {
				continue
			}
			if l, ok := layer[dep]; !ok || l >= own {
				t.Errorf("%s (layer %d) imports %s (layer %d); a package imports only lower layers", name, own, dep, l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range layer {
		if !seen[name] {
			t.Errorf("the layer table names %s, which is not a package", name)
		}
	}
}
