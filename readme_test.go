package netemu_test

import (
	"bytes"
	"flag"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The examples of README.md and of every guide in docs/ (readmeFiles)
// are run by TestREADME and TestREADMEGo, so that no page can drift from
// the code, and a block keeps its test wherever it moves:
//
//   - every line of a command block (a fenced block of shell commands)
//     runs and must exit 0, or is skipped for the reason readmeSkips
//     gives; a line no rule covers fails the test. A line on several
//     pages runs once;
//   - a block of output follows a paragraph whose last command in
//     backquotes (`go run ./cmd/netemu …`, `./netemu …`, `sudo ./netemu
//     …`) printed it, or a Go program on the same page; it must equal what
//     the command prints, byte for byte. A block that ends with a line
//     "..." shows the first lines of the output. Kernel mode's figures
//     belong to the machine: for those only the lines without figures must
//     match;
//   - files a command writes under docs/ (the pictures) must equal the
//     files in docs/;
//   - the Go blocks are whole files: each goes into a package of its own
//     in the module that the workspace commands (a block with go work
//     init, on any page) make, where they must be gofmt-formatted, pass go
//     vet and go test, and a program's output must be the block that
//     follows it; the test TestGetCostsTwoRoundTrips is the body of
//     emutest's ExampleNew;
//   - what is not to be run is not fenced: a transcript of a real session
//     or a machine, and an excerpt of another project's code, are indented
//     by four spaces.
//
// `go run ./cmd/netemu` lines run a binary built once by the test; files
// they write land in a temporary directory. -short skips the kernel-mode
// lines, which take seconds of real time; -readme.long also runs the
// benchmarks and the accuracy report, which take a quarter of a minute
// and more and keep the CPU busy (go test . -run README -readme.long).

var (
	readmeLong   = flag.Bool("readme.long", false, "also run the documentation's commands that take minutes")
	readmeUpdate = flag.Bool("readme.update", false, "rewrite the output blocks and pictures of the pages that differ from what their commands print and draw now (not kernel mode's, whose figures are the machine's)")
)

// readmeEdits are the output blocks -readme.update rewrites once every
// check has run.
var readmeEdits struct {
	sync.Mutex
	byFile map[string][]readmeEdit
}

type readmeEdit struct {
	line     int // the block's opening fence, from 1
	old, new string
}

// applyReadmeEdits rewrites each edited block, the last of a page first.
func applyReadmeEdits(t *testing.T, root string) {
	readmeEdits.Lock()
	defer readmeEdits.Unlock()
	for file, edits := range readmeEdits.byFile {
		path := filepath.Join(root, file)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(data), "\n")
		slices.SortFunc(edits, func(a, b readmeEdit) int { return b.line - a.line })
		for _, e := range edits {
			n := strings.Count(e.old, "\n")
			if e.line+n > len(lines) || strings.Join(lines[e.line:e.line+n], "") != e.old {
				t.Fatalf("%s:%d: the block is not what the test read; run -readme.update once", file, e.line)
			}
			if !strings.HasSuffix(e.new, "\n") {
				e.new += "\n"
			}
			fresh := strings.SplitAfter(e.new, "\n")
			lines = slices.Replace(lines, e.line, e.line+n, fresh[:len(fresh)-1]...)
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: rewrote %d blocks", file, len(edits))
	}
	readmeEdits.byFile = nil
}

// readmeSkips are the command lines of README.md and docs/ that do not
// run every time, and why.
var readmeSkips = map[string]struct {
	when string // always, short (under -short), long (unless -readme.long)
	why  string
}{
	"cd netemu":                                                    {"always", "the test runs in the source's root"},
	"go build -o netemu ./cmd/netemu":                              {"always", "the test builds the command once, into a temporary directory, and runs the ./netemu lines with it"},
	"go test -race ./...":                                          {"always", "the suite holds this test, which would run itself"},
	"go test -C examples/raft -race ./...":                         {"always", "CI runs it after the suite (.ci/run); here it would build raft's module beside the suite"},
	"go test -run Example -v ./emutest":                            {"always", "the suite runs emutest's examples itself; building them again here took half a minute"},
	"go test -v ./examples/intest":                                 {"always", "the suite runs examples/intest's tests itself; building them again here took half a minute"},
	"go test -bench . ./bench/...":                                 {"long", "about 15 s of benchmarks that keep the CPU busy; under go test ./... they would slow the kernel-mode tests that run beside them in real time"},
	"go run ./bench/accuracy > docs/ACCURACY.md":                   {"long", "minutes of real-clock runs (and, as root, about 8 minutes of kernel runs)"},
	"sudo ./netemu reproduce --lossy":                              {"long", "about 7 minutes of kernel runs"},
	"sudo ./netemu reproduce rtt-fairness --plot rtt-fairness.svg": {"long", "about 8 minutes of kernel runs"},
	"sudo ./netemu reproduce rtt-fairness --kernel-runs 3 --plot rtt-fairness.png":        {"long", "about 23 minutes of kernel runs"},
	"sudo ./netemu reproduce flows --kernel-runs 3 --plot flows.png":                      {"long", "about 5 minutes of kernel runs"},
	"sudo ./netemu reproduce home-link --kernel-runs 3 --plot home-link.png":              {"long", "about 5 minutes of kernel runs"},
	"sudo ./netemu reproduce parking-lot --kernel-runs 3 --plot parking-lot.png":          {"long", "about 8 minutes of kernel runs"},
	"sudo ./netemu reproduce bbr-vs-cubic --plot bbr-vs-cubic.png":                        {"long", "about 10 minutes of kernel runs"},
	"sudo ./netemu reproduce bbr-vs-cubic-dumbbell --plot bbr-vs-cubic-dumbbell.png":      {"long", "about 10 minutes of kernel runs"},
	"sudo ./netemu reproduce --backend kernel":                                            {"short", "about 30 s of kernel runs"},
	"sudo ./netemu compare bulk --rtt 50ms --rate 10mbit":                                 {"short", "about 5 s of kernel runs"},
	"sudo ./netemu compare page --proto h1,h1s,h2":                                        {"short", "about 2 s of kernel runs"},
	"sudo ./netemu compare loaded --rtt 20ms --rate 20mbit --qdisc fifo,codel,fq_codel":   {"short", "about 35 s of kernel runs"},
	"sudo ./netemu compare bulk --tcp netemu,gvisor --rtt 100ms --rate 25mbit --queue 30": {"short", "about 10 s of kernel runs"},
	// A study's files: each line needs a file of the one before it, and
	// the test runs each line in a directory of its own.
	// cmd/netemu's TestSpec, TestResume and TestShardsMergeToTheWholeSweep
	// run the same steps.
	"./netemu sweep --spec study.yaml --out results.jsonl":                                                                           {"always", "needs a study.yaml; cmd/netemu's TestSpec runs one"},
	"./netemu sweep --spec study.yaml --out results.jsonl --continue":                                                                {"always", "needs an interrupted results file; cmd/netemu's TestResume makes them"},
	"./netemu sweep --spec study.yaml --shard 0/3 --out part-0.jsonl":                                                                {"always", "needs a study.yaml; cmd/netemu's TestShardsMergeToTheWholeSweep runs the shards"},
	"./netemu merge part-0.jsonl part-1.jsonl part-2.jsonl":                                                                          {"always", "needs the shards' files; cmd/netemu's TestShardsMergeToTheWholeSweep merges them"},
	"./netemu run page --tcp netemu --rtt 40ms --trace-down Verizon-LTE-short.down --trace-up Verizon-LTE-short.up":                  {"always", "needs mahimahi's recorded traces, which the repository does not carry; link/testdata/traces holds generated ones"},
	"sudo ./netemu compare bulk --size 5MiB --tcp netemu,gvisor --trace-down TMobile-LTE-short.down --trace-up TMobile-LTE-short.up": {"always", "needs mahimahi's recorded traces, as above"},
}

// A readmeBlock is a fenced block of README.md or of a guide in docs/.
type readmeBlock struct {
	file  string // README.md, or docs/NAME.md
	line  int    // of its opening fence, from 1
	lang  string // after the fence: "go", or ""
	text  string
	intro string // the paragraph just above it, its lines joined by spaces
}

// where names the block's opening fence, file:line.
func (b readmeBlock) where() string { return b.file + ":" + strconv.Itoa(b.line) }

func (b readmeBlock) kind() string {
	switch first := strings.Fields(b.text); {
	case b.lang == "go":
		return "go"
	case len(first) > 0 && slices.Contains([]string{"go", "sudo", "git", "cd", "mkdir", "./netemu"}, first[0]):
		return "commands"
	}
	return "output"
}

// readmeFiles are the pages whose blocks the tests run: README.md, then
// every page of docs/ in name order.
func readmeFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(docs)
	return append([]string{"README.md"}, docs...)
}

// readmeBlocks returns the fenced blocks of every page of readmeFiles, in
// order.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	for _, file := range readmeFiles(t) {
		blocks = append(blocks, fileBlocks(t, file)...)
	}
	return blocks
}

// fileBlocks returns the fenced blocks of one page.
func fileBlocks(t *testing.T, file string) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var blocks []readmeBlock
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		blk := readmeBlock{file: file, line: i + 1, lang: lang}
		j := i - 1
		for j >= 0 && lines[j] == "" {
			j--
		}
		var intro []string
		for ; j >= 0 && lines[j] != "" && !strings.HasPrefix(lines[j], "```"); j-- {
			intro = append([]string{strings.TrimSpace(lines[j])}, intro...)
		}
		blk.intro = strings.Join(intro, " ")
		var text []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			text = append(text, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s: the block never ends", blk.where())
		}
		blk.text = strings.Join(text, "\n") + "\n"
		blocks = append(blocks, blk)
	}
	return blocks
}

// commandLines returns a command block's lines without their comments.
func commandLines(b readmeBlock) []string {
	var out []string
	for l := range strings.SplitSeq(strings.TrimSpace(b.text), "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// shellWords splits a command line as a shell would, for the quoting the
// pages use: words, "double" and 'single' quotes.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// introCommand is the last command in backquotes in an output block's
// introduction.
func introCommand(b readmeBlock) string {
	cmd := ""
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(b.intro, -1) {
		for _, p := range []string{"go run ./cmd/netemu ", "./netemu ", "sudo ./netemu "} {
			if strings.HasPrefix(m[1], p) {
				cmd = m[1]
			}
		}
	}
	return cmd
}

// readmeRun runs the pages' command lines, once each.
type readmeRun struct {
	root, bin string

	mu   sync.Mutex
	runs map[string]*readmeResult
}

type readmeResult struct {
	once           sync.Once
	dir            string // where it ran, for netemu lines
	stdout, stderr []byte
	err            error
}

// run runs line (once) and returns its result; skip says why it does not
// run here, if it does not.
func (r *readmeRun) run(t *testing.T, line string) *readmeResult {
	t.Helper()
	if s, ok := readmeSkips[line]; ok {
		switch {
		case s.when == "always":
			t.Skip(s.why)
		case s.when == "short" && testing.Short():
			t.Skip("-short: " + s.why)
		case s.when == "long" && !*readmeLong:
			t.Skip(s.why + "; -readme.long runs it")
		}
	}
	words := shellWords(t, line)
	if len(words) > 3 && words[0] == "sudo" && words[1] == "go" && words[2] == "run" {
		t.Fatalf("%q: write sudo ./netemu …: sudo go run fails where sudo resets PATH", line)
	}
	if words[0] == "sudo" {
		if os.Geteuid() != 0 {
			t.Skip("needs root")
		}
		if _, err := os.Stat("/dev/net/tun"); err != nil {
			t.Skipf("kernel mode needs /dev/net/tun: %v", err)
		}
		words = words[1:]
	}
	var stdoutFile string
	if i := slices.Index(words, ">"); i >= 0 && i == len(words)-2 {
		stdoutFile, words = words[i+1], words[:i]
	}
	r.mu.Lock()
	res, ok := r.runs[line]
	if !ok {
		res = &readmeResult{}
		r.runs[line] = res
	}
	r.mu.Unlock()
	res.once.Do(func() {
		var cmd *exec.Cmd
		switch {
		case len(words) > 2 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/netemu":
			cmd = exec.Command(r.bin, words[3:]...)
		case words[0] == "./netemu":
			cmd = exec.Command(r.bin, words[1:]...)
		case words[0] == "go":
			cmd = exec.Command("go", words[1:]...)
			cmd.Dir = r.root
		default:
			res.err = errNoRule
			return
		}
		if cmd.Dir == "" { // netemu: files it writes go to a directory of its own
			res.dir, res.err = os.MkdirTemp("", "readme")
			if res.err != nil {
				return
			}
			if res.err = os.Mkdir(filepath.Join(res.dir, "docs"), 0o755); res.err != nil {
				return
			}
			// The traces in link/testdata and the topology files in
			// topo/testdata, at the paths they have from the
			// repository's root, where the pages' commands run.
			for _, d := range []string{"link", "topo"} {
				if res.err = os.Symlink(filepath.Join(r.root, d), filepath.Join(res.dir, d)); res.err != nil {
					return
				}
			}
			cmd.Dir = res.dir
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		res.err = cmd.Run()
		res.stdout, res.stderr = stdout.Bytes(), stderr.Bytes()
		if res.err == nil && stdoutFile != "" {
			res.err = os.WriteFile(filepath.Join(t.TempDir(), filepath.Base(stdoutFile)), res.stdout, 0o644)
		}
	})
	if res.err == errNoRule {
		t.Fatalf("%q: readme_test.go has no rule for this command: add one, or a reason to skip it to readmeSkips", line)
	}
	return res
}

type readmeError string

func (e readmeError) Error() string { return string(e) }

const errNoRule = readmeError("no rule")

// TestREADME and TestREADMEGo run side by side: the kernel-mode lines
// wait on real time, and the Go blocks' builds use the CPU meanwhile.
func TestREADME(t *testing.T) {
	t.Parallel()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "netemu")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/netemu").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r := &readmeRun{root: root, bin: bin, runs: map[string]*readmeResult{}}
	t.Cleanup(func() {
		for _, res := range r.runs {
			if res.dir != "" {
				os.RemoveAll(res.dir)
			}
		}
	})
	// One subtest per command line, in the order of its first
	// appearance: a line in several blocks, or in a block and in the
	// paragraph above the output it prints, runs once, and its subtest
	// makes every check of it. (A subtest per appearance held one of the
	// -parallel slots waiting for another's run of the same line: the
	// half minute of kernel runs of reproduce --backend kernel held both.)
	type check struct {
		line    string
		block   *readmeBlock  // the first command block that has it; nil if none
		outputs []readmeBlock // blocks of what it prints
	}
	var checks []*check
	byLine := map[string]*check{}
	add := func(line string) *check {
		c := byLine[line]
		if c == nil {
			c = &check{line: line}
			byLine[line] = c
			checks = append(checks, c)
		}
		return c
	}
	blocks := readmeBlocks(t)
	for i, b := range blocks {
		switch b.kind() {
		case "commands":
			if strings.Contains(b.text, "go work init") {
				continue // TestREADMEGo runs the workspace block
			}
			for _, line := range commandLines(b) {
				if c := add(line); c.block == nil {
					c.block = &blocks[i]
				}
			}
		case "output":
			cmd := introCommand(b)
			if cmd == "" {
				if i > 0 && blocks[i-1].kind() == "go" && blocks[i-1].file == b.file {
					continue // a program's output: TestREADMEGo
				}
				t.Errorf("%s: a block of output, and no command in backquotes in the paragraph above it (indent a block that is not to be run)", b.where())
				continue
			}
			c := add(cmd)
			c.outputs = append(c.outputs, b)
		}
	}
	if *readmeUpdate {
		t.Cleanup(func() { applyReadmeEdits(t, root) })
	}
	for _, c := range checks {
		t.Run(c.line, func(t *testing.T) {
			t.Parallel()
			res := r.run(t, c.line)
			if res.err != nil {
				where := c.outputs
				if c.block != nil {
					where = []readmeBlock{*c.block}
				}
				t.Fatalf("%s: %s: %v\n%s", where[0].where(), c.line, res.err, res.stderr)
			}
			// Pictures in docs/ are what their commands draw.
			for _, w := range shellWords(t, c.line) {
				if !strings.HasPrefix(w, "docs/") || res.dir == "" || c.block == nil {
					continue
				}
				got, err := os.ReadFile(filepath.Join(res.dir, w))
				if err != nil {
					t.Fatal(err)
				}
				want, err := os.ReadFile(filepath.Join(root, w))
				if *readmeUpdate && !bytes.Equal(got, want) {
					if err := os.WriteFile(filepath.Join(root, w), got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s differs from what %s's command draws (%v); run it in the module's root", w, c.block.where(), err)
				}
			}
			for _, b := range c.outputs {
				compareOutput(t, b, c.line, string(res.stdout))
			}
		})
	}
}

// compareOutput checks that block b shows what cmd printed.
func compareOutput(t *testing.T, b readmeBlock, cmd, got string) {
	t.Helper()
	want := b.text
	kernel := strings.HasPrefix(cmd, "sudo ")
	cut := false
	if w, ok := strings.CutSuffix(want, "\n  ...\n"); ok {
		want, cut = w+"\n", true
		if n := strings.Count(want, "\n"); strings.Count(got, "\n") > n {
			got = strings.Join(strings.SplitAfter(got, "\n")[:n], "")
		}
	}
	if *readmeUpdate && !kernel && got != want {
		text := got
		if cut {
			text = strings.TrimSuffix(got, "\n") + "\n  ...\n"
		}
		readmeEdits.Lock()
		if readmeEdits.byFile == nil {
			readmeEdits.byFile = map[string][]readmeEdit{}
		}
		readmeEdits.byFile[b.file] = append(readmeEdits.byFile[b.file], readmeEdit{line: b.line, old: b.text, new: text})
		readmeEdits.Unlock()
		return
	}
	if kernel {
		// The kernel's figures are this machine's: compare the lines
		// without figures, and the number of lines. So are the notes
		// of a run whose bridge was late ("* case: the bridge ..."),
		// which a busy machine adds.
		shape := func(s string) string {
			var out []string
			for _, l := range strings.Split(s, "\n") {
				if strings.HasPrefix(l, "* ") {
					continue
				}
				if strings.ContainsAny(l, "0123456789") {
					l = "(figures)"
				}
				out = append(out, strings.Join(strings.Fields(l), " "))
			}
			return strings.Join(out, "\n")
		}
		want, got = shape(want), shape(got)
	}
	if got != want {
		t.Errorf("%s shows what %q printed once; now it prints:\n%s\n%s shows:\n%s", b.where(), cmd, got, b.file, want)
	}
}

// TestREADMEGo makes the module of the workspace commands, beside a clone
// of this module, and builds, vets, tests and runs the Go code of
// README.md and docs/ in it.
func TestREADMEGo(t *testing.T) {
	t.Parallel()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	sandbox := t.TempDir()
	if err := os.Symlink(root, filepath.Join(sandbox, "netemu")); err != nil {
		t.Fatal(err)
	}
	env := []string{"GOFLAGS=-buildvcs=false"}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOWORK=") && !strings.HasPrefix(e, "GOFLAGS=") {
			env = append(env, e)
		}
	}
	goCmd := func(dir string, args ...string) ([]byte, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, readmeError(err.Error() + "\n" + stderr.String())
		}
		return out, nil
	}

	blocks := readmeBlocks(t)
	dir := filepath.Join(sandbox, "netemu") // in the clone, as the workspace commands start
	made := false
	for _, b := range blocks {
		if b.kind() != "commands" || !strings.Contains(b.text, "go work init") {
			continue
		}
		for _, line := range commandLines(b) {
			for part := range strings.SplitSeq(line, "&&") {
				words := shellWords(t, part)
				switch {
				case len(words) == 2 && words[0] == "cd":
					dir = filepath.Join(dir, words[1])
				case len(words) == 2 && words[0] == "mkdir":
					if err := os.Mkdir(filepath.Join(dir, words[1]), 0o755); err != nil {
						t.Fatal(err)
					}
				case words[0] == "go":
					if out, err := goCmd(dir, words[1:]...); err != nil {
						t.Fatalf("%s: %s: %v\n%s", b.where(), part, err, out)
					}
				default:
					t.Fatalf("%s: %q: readme_test.go has no rule for this command", b.where(), part)
				}
			}
		}
		made = true
	}
	if !made {
		t.Fatal("neither README.md nor docs/ has a block with go work init: the Go code has no module to build in")
	}

	type program struct {
		pkg    string
		output *readmeBlock
	}
	var programs []program
	var readmeTest *ast.FuncDecl
	fset := token.NewFileSet()
	for i, b := range blocks {
		if b.kind() != "go" {
			continue
		}
		src := []byte(b.text)
		if formatted, err := format.Source(src); err != nil || !bytes.Equal(formatted, src) {
			t.Errorf("%s: the Go code is not gofmt-formatted (%v)", b.where(), err)
		}
		f, err := parser.ParseFile(fset, b.file, src, 0)
		if err != nil {
			t.Fatalf("%s: %v", b.where(), err)
		}
		// A package per block, named by its page and line: readme12, gotests40.
		pkg := filepath.Join(dir, strings.ToLower(strings.TrimSuffix(filepath.Base(b.file), ".md"))+strconv.Itoa(b.line))
		if err := os.Mkdir(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		name := "main.go"
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fd.Name.Name, "Test") {
				name = "readme_test.go"
				if fd.Name.Name == "TestGetCostsTwoRoundTrips" {
					readmeTest = fd
				}
			}
		}
		if err := os.WriteFile(filepath.Join(pkg, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
		if f.Name.Name == "main" {
			p := program{pkg: "./" + filepath.Base(pkg)}
			if i+1 < len(blocks) && blocks[i+1].file == b.file && blocks[i+1].kind() == "output" && introCommand(blocks[i+1]) == "" {
				p.output = &blocks[i+1]
			}
			programs = append(programs, p)
		}
	}
	for _, args := range [][]string{{"vet", "./..."}, {"test", "-count=1", "./..."}} {
		if out, err := goCmd(dir, args...); err != nil {
			t.Fatalf("go %s in the pages' module: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, p := range programs {
		out, err := goCmd(dir, "run", p.pkg)
		if err != nil {
			t.Errorf("go run %s: %v", p.pkg, err)
			continue
		}
		if p.output != nil && string(out) != p.output.text {
			t.Errorf("%s shows what its program printed once; now it prints:\n%s", p.output.where(), out)
		}
	}

	// The pages' TestGetCostsTwoRoundTrips is emutest's ExampleNew.
	if readmeTest == nil {
		t.Fatal("neither README.md nor docs/ has TestGetCostsTwoRoundTrips")
	}
	ef, err := parser.ParseFile(fset, filepath.Join("emutest", "example_test.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var example *ast.FuncDecl
	for _, d := range ef.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "ExampleNew" {
			example = fd
		}
	}
	body := func(stmts []ast.Stmt) string {
		var b bytes.Buffer
		for _, s := range stmts {
			printer.Fprint(&b, fset, s)
			b.WriteString("\n")
		}
		return b.String()
	}
	if example == nil || len(example.Body.List) < 1 {
		t.Fatal("emutest/example_test.go has no ExampleNew")
	}
	if got, want := body(example.Body.List[1:]), body(readmeTest.Body.List); got != want {
		t.Errorf("emutest's ExampleNew (after its first line) is not TestGetCostsTwoRoundTrips of README.md or docs/:\n%s\nthe page's:\n%s", got, want)
	}
}
