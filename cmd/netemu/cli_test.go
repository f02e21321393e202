package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"
	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/workloads"
)

// help, <command> --help and help <command|workload> print to stdout and
// exit 0; each command's help names its example and flags.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"help", "run"}, {"run", "--help"}, {"run", "bulk", "-h"}, {"help", "reproduce"}, {"reproduce", "--help"}, {"help", "nagle"}, {"version", "--help"}} {
		code, out, errOut := runNetemu(args...)
		if code != 0 || errOut != "" || out == "" {
			t.Errorf("netemu %s: exit %d, stderr %q, %d bytes on stdout; want help on stdout and exit 0", strings.Join(args, " "), code, errOut, len(out))
		}
		if len(args) == 2 && args[0] == "help" && args[1] != "nagle" && !strings.Contains(out, "Example:") {
			t.Errorf("netemu %s has no example:\n%s", strings.Join(args, " "), out)
		}
	}
	if code, _, errOut := runNetemu("help", "video"); code != 2 || !strings.Contains(errOut, `help "video"`) {
		t.Errorf("help video: exit %d, %q", code, errOut)
	}
}

// version, --version and -v print the same: the module's version, the
// commit, and the Go and gVisor versions.
func TestVersion(t *testing.T) {
	code, out, _ := runNetemu("version")
	if code != 0 || !strings.HasPrefix(out, "netemu ") || !strings.Contains(out, "\ncommit ") || !strings.Contains(out, "go1.") || !strings.Contains(out, "gvisor.dev/gvisor ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
	for _, flag := range []string{"--version", "-version", "-v"} {
		if c, o, e := runNetemu(flag); c != 0 || o != out || e != "" {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want what netemu version prints", flag, c, o, e)
		}
	}
	if c, _, e := runNetemu("--version", "extra"); c != 2 || !strings.Contains(e, `unexpected argument "extra"`) {
		t.Errorf("netemu --version extra: exit %d, %q", c, e)
	}
}

// The commit, its date and uncommitted changes come from the build's VCS
// stamps; without them the line says why there is none.
func TestVersionText(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"},
		Deps:     []*debug.Module{{Path: "gvisor.dev/gvisor", Version: "v0.0.0-2026"}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T11:26:25Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "netemu v1.2.3\ncommit abc123 of 2026-12-01T11:26:25Z, with changes not committed\ngo1.26.8 linux/amd64\ngvisor.dev/gvisor v0.0.0-2026\n"
	if got := versionText(bi, "linux", "amd64"); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	bi.Settings = nil
	if got := versionText(bi, "linux", "amd64"); !strings.Contains(got, "\ncommit (not recorded: ") {
		t.Errorf("without VCS stamps:\n%s", got)
	}
}

// help help explains help, like help of any command.
func TestHelpHelp(t *testing.T) {
	code, out, errOut := runNetemu("help", "help")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "netemu help [command|workload]") || !strings.Contains(out, "Example:") {
		t.Errorf("help help: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// An unknown flag one slip away from a real one names it; one far from
// every flag does not guess.
func TestUnknownFlagSuggests(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "bulk", "--rrt", "10ms"}, "unknown flag --rrt; did you mean --rtt?"},
		{[]string{"run", "--rtt", "10ms", "--ratee", "1mbit", "bulk"}, "unknown flag --ratee; did you mean --rate?"},
		{[]string{"run", "bulk", "--szie", "1MB"}, "unknown flag --szie; did you mean --size?"},
		{[]string{"run", "--szie", "1MB", "bulk"}, "unknown flag --szie; did you mean --size?"},
		{[]string{"sweep", "bulk", "--seesd", "3"}, "did you mean --seeds?"},
		{[]string{"proxy", "--forwrd", "127.0.0.1:0=127.0.0.1:1"}, "unknown flag --forwrd; did you mean --forward?"},
		{[]string{"run", "bulk", "--bogus"}, "unknown flag --bogus (see netemu help run)"},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}

// Every file a command writes is named on stderr, the files a command of
// several cases writes beside the name given included.
func TestWrittenFilesAnnounced(t *testing.T) {
	dir := t.TempDir()
	plot, pcap := filepath.Join(dir, "n.svg"), filepath.Join(dir, "n.pcap")
	code, _, errOut := runNetemu("run", "nagle", "--rtt", "0", "--rounds", "3", "--nodelay", "both", "--plot", plot, "--pcap", pcap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 4 {
		t.Fatalf("wrote %v; want a figure and a capture for each of the two cases", files)
	}
	for _, f := range files {
		flag := "--plot"
		if filepath.Ext(f) == ".pcap" {
			flag = "--pcap"
		}
		if !strings.Contains(errOut, "netemu: wrote "+f+" ("+flag+")\n") {
			t.Errorf("stderr %q does not name %s", errOut, f)
		}
	}
	if strings.Count(errOut, "netemu: wrote ") != 4 {
		t.Errorf("stderr %q; want 4 files named", errOut)
	}
}

// The netem options' bytes-per-second rates get the note --rate gets, and
// what the netem options leave out is said to keep netemu's defaults, not
// tc's; --jobs beyond the CPUs says it will not help.
func TestNotes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "bulk", "--size", "100KB", "--netem", "delay 10ms rate 10Mbps"}, []string{"--netem's rate 10Mbps is bytes per second, as tc reads it: 80mbit; write 10mbit for bits"}},
		{[]string{"run", "bulk", "--size", "100KB", "--netem", "delay 25ms"}, []string{"the netem options give no rate: the link keeps netemu's --rate 10mbit, where tc's netem would add no rate limit"}},
		{[]string{"run", "bulk", "--size", "100KB", "--netem", "loss 1%"}, []string{"give no delay and no rate: the link keeps netemu's --rtt 50ms and --rate 10mbit"}},
		{[]string{"run", "bulk", "--size", "100KB", "--netem", "loss 1%", "--rtt", "20ms", "--rate", "0"}, nil},
		{[]string{"run", "bulk", "--size", "100KB", "--netem-up", "rate 1mbit delay 5ms", "--netem-down", "rate 20mbit delay 30ms"}, nil},
		{[]string{"sweep", "bulk", "--size", "100KB", "--rtt", "10ms,20ms", "--jobs", itoa(cli.AvailableCPUs() + 1)}, []string{"is more than the " + itoa(cli.AvailableCPUs()) + " CPUs this process may use", "no faster"}},
	} {
		code, _, errOut := runNetemu(c.args...)
		if code != 0 {
			t.Fatalf("netemu %s: exit %d: %s", strings.Join(c.args, " "), code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("netemu %s: stderr %q; want %q", strings.Join(c.args, " "), errOut, w)
			}
		}
		if c.want == nil && strings.Contains(errOut, "note:") {
			t.Errorf("netemu %s: stderr %q; want no note", strings.Join(c.args, " "), errOut)
		}
	}
}

// Output files are checked before anything runs: a missing directory and
// one file named twice are usage errors, in one line, and nothing is
// written.
func TestOutputsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	same := filepath.Join(dir, "x")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "page", "--pcap", "/no/such/dir/x.pcap"}, "--pcap /no/such/dir/x.pcap: the directory /no/such/dir does not exist"},
		{[]string{"sweep", "page", "--rtt", "10ms,20ms", "--plot", "/no/such/dir/x.svg"}, "--plot /no/such/dir/x.svg"},
		{[]string{"explain", "bulk", "--timeline", "/no/such/x.csv"}, "--timeline /no/such/x.csv"},
		{[]string{"run", "page", "--pcap", same, "--timeline", same}, "--pcap and --timeline both write"},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
	if _, err := os.Stat(same); err == nil {
		t.Errorf("%s was written although the command was refused", same)
	}
}

// failWriter fails every write, as a full disk does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// Output that cannot be written is a failure, named in one line, for
// tables and JSON alike.
func TestLostOutputIsAnError(t *testing.T) {
	for _, args := range [][]string{{"reproduce"}, {"run", "nagle", "--rounds", "3", "--rtt", "0"}, {"run", "bulk", "--size", "100KB", "--json"}, {"explain", "nagle", "--rounds", "3", "--rtt", "0"}} {
		var errOut bytes.Buffer
		code := run(t.Context(), args, failWriter{}, &errOut)
		if code != 1 || !strings.Contains(errOut.String(), "writing the output") || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("netemu %s > full disk: exit %d, stderr %q; want exit 1 and one line about the output", strings.Join(args, " "), code, errOut.String())
		}
	}
}

// A rate in tc's bytes-per-second units gets a note saying what it
// means, on stderr and on the table's first line.
func TestBytesPerSecondNote(t *testing.T) {
	const note = "10Mbps is 80 Mbit/s in tc's units (bytes per second); did you mean 10mbit?"
	code, out, errOut := runNetemu("run", "bulk", "--size", "100KB", "--rate", "10Mbps")
	if code != 0 || !strings.Contains(errOut, "note: --rate "+note) || !strings.HasPrefix(out, "note: "+note+"\n") {
		t.Errorf("exit %d, stdout %q, stderr %q; want the note on both", code, out, errOut)
	}
	code, out, _ = runNetemu("sweep", "bulk", "--size", "100KB", "--rate", "10Mbps,1mbit")
	if code != 0 || !strings.HasPrefix(out, "note: "+note+"\n") {
		t.Errorf("sweep: exit %d, stdout %q; want the note first", code, out)
	}
	if _, out, _ = runNetemu("run", "bulk", "--size", "100KB", "--rate", "10Mbps", "--json"); strings.Contains(out, "note") {
		t.Errorf("--json: %q; want the records alone", out)
	}
}

// A flag given twice is refused, not taken as its last value; flag's
// "parse error" is worded as what would work.
func TestFlagSlips(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"run bulk --rtt 50ms --rtt 100ms", "run: --rtt is given 2 times (50ms, then 100ms); give it once, or a list to sweep: --rtt 50ms,100ms"},
		{"run --rtt 10ms bulk --rtt 20ms", "--rtt is given 2 times (10ms, then 20ms)"},
		{"run bulk --size 1MB --size 2MB", "run: --size is given 2 times (1MB, then 2MB); give it once"},
		{"run bulk --json --json", "run: --json is given 2 times; give it once"},
		{"run bulk --seed abc", `run: --seed "abc": want a whole number of 0 or more, like 1`},
		{"run bulk --mtu 1.5", `run: --mtu "1.5": want a whole number, like 1500`},
		{"run bulk --json=yes", "run: --json=yes: --json is a switch: write --json alone to turn it on, or --json=false"},
		{"sweep bulk --jobs x", `sweep: --jobs "x": want a whole number, like 0`},
	} {
		code, out, errOut := runNetemu(strings.Fields(c.args)...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", c.args, code, out, errOut, c.want)
		}
	}
}

// SIGTERM, as timeout, systemd and CI runners send it, stops a run like
// SIGINT: a message, exit status 143, and a pcap file that is complete and
// readable.
func TestSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	t.Parallel()
	pcap := filepath.Join(t.TempDir(), "x.pcap")
	cmd := exec.Command(netemuBin(t), "run", "bulk", "--size", "1GiB", "--rate", "50mbit", "--clock", "real", "--pcap", pcap)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The signal goes once the run has begun: its pcap file exists (the
	// handler is in place before the run starts), and packets have been
	// written to it. A fixed wait would not do: on a loaded machine the
	// process took more than a second to start, and SIGTERM killed it
	// before netemu handled signals.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if st, err := os.Stat(pcap); err == nil && st.Size() > 24 { // more than the file header
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no packet in %s a minute after the start; stderr %q", pcap, errOut.String())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if cmd.ProcessState.ExitCode() != 143 || !strings.Contains(errOut.String(), "interrupted by terminated") {
		t.Errorf("after SIGTERM: %v, exit %d, stderr %q; want exit 143 and a message", err, cmd.ProcessState.ExitCode(), errOut.String())
	}
	f, err := os.Open(pcap)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatalf("pcap header: %v", err)
	}
	n := 0
	for {
		_, _, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("pcap record %d: %v (a record cut short)", n+1, err)
		}
		n++
	}
	if n == 0 {
		t.Error("the pcap holds no packets")
	}
}

// A link on which no connection can open is refused up front, in the
// user's terms: which setting, and what would work.
func TestRTTTooLongForAHandshake(t *testing.T) {
	code, out, errOut := runNetemu("run", "page", "--rtt", "10h")
	if code != 2 || out != "" || !strings.Contains(errOut, "10h0m0s cannot complete a TCP handshake") || !strings.Contains(errOut, "want an RTT under 2m7s") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// A link too slow for gVisor's TCP's timers ends in a reset, and the
// error says why in the flags' terms (netemu's TCP, as Linux's, keeps
// retransmitting through it and moves the data in the end). The hours
// of a 1 kbit link took 9 s of CPU under the race detector, 0.2 s
// without: the command runs as a process (netemuBin).
func TestLinkTooSlowSaysWhy(t *testing.T) {
	t.Parallel()
	code, _, errOut := runBin(t, "run", "bulk", "--rate", "1kbit", "--tcp", "gvisor")
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "too slow for TCP's timers") || !strings.Contains(errOut, "at 1kbit") {
		t.Errorf("exit %d, stderr %q; want one line saying the link is too slow for TCP's timers", code, errOut)
	}
}

// h3 runs on the real clock only: on the virtual clock (the default) it
// is a usage error that names the reason and the fix.
func TestH3NeedsRealClock(t *testing.T) {
	for _, args := range [][]string{{"run", "page", "--proto", "h3"}, {"sweep", "page", "--proto", "h1,h3", "--rtt", "10ms,20ms"}} {
		code, out, errOut := runNetemu(args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "quic-go reads the wall clock") || !strings.Contains(errOut, "--clock real") {
			t.Errorf("netemu %s: exit %d, stderr %q; want exit 2 and one line naming the reason and --clock real", strings.Join(args, " "), code, errOut)
		}
	}
}

// Every flag that help lists for a command or a workload is one the
// command accepts: help is read as a newcomer reads it, and each "--name"
// it shows is given to the command (with a value no flag takes, so that
// nothing runs) and must not be refused as unknown.
func TestHelpFlagsAreAccepted(t *testing.T) {
	listed := regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`)
	try := func(what string, help string, args func(flag string) []string) {
		names := listed.FindAllStringSubmatch(help, -1)
		if len(names) == 0 && what != "help version" {
			t.Errorf("%s lists no flags:\n%s", what, help)
		}
		for _, m := range names {
			a := args(m[1])
			code, _, errOut := runNetemu(a...)
			if code == 0 {
				continue
			}
			if strings.Contains(errOut, "unknown flag") || strings.Contains(errOut, " has no --") {
				t.Errorf("%s lists --%s, but netemu %s says: %s", what, m[1], strings.Join(a, " "), errOut)
			}
		}
	}
	for _, c := range commands {
		_, help, _ := runNetemu("help", c.Name)
		try("help "+c.Name, help, func(f string) []string { return []string{c.Name, "--" + f + "=x"} })
	}
	for _, k := range workloads.Kinds() {
		_, help, _ := runNetemu("help", k.Name)
		try("help "+k.Name, help, func(f string) []string { return []string{"run", k.Name, "--" + f + "=x"} })
	}
}

// --queue in bandwidth-delay products is each cell's own: 4bdp at 40 ms
// and 10 mbit is 133 packets of 1500 bytes (4 × 10e6 × 0.04 / 8 / 1500,
// rounded), at 20 mbit 267; without a rate there is no product.
func TestQueueInBDP(t *testing.T) {
	code, out, errOut := runNetemu("sweep", "bulk", "--size", "100KB", "--rtt", "40ms", "--rate", "10mbit,20mbit", "--queue", "4bdp", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []float64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec struct {
			Queue float64 `json:"queue_packets"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		got = append(got, rec.Queue)
	}
	if len(got) != 2 || got[0] != 133 || got[1] != 267 {
		t.Errorf("queue_packets %v; want 133 and 267", got)
	}
	for _, c := range []struct{ args, want string }{
		{"run bulk --queue 4bdp --rate 0", "--queue 4bdp: a bandwidth-delay product needs a rate"},
		{"run bulk --queue xbdp", `"xbdp" is not a number of bandwidth-delay products; write it like 4bdp`},
		{"run bulk --queue 0bdp", `"0bdp" is not a number of bandwidth-delay products`},
	} {
		code, out, errOut := runNetemu(strings.Fields(c.args)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stderr %q; want exit 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// A seeded sweep of share, which runs for the duration it is given,
// has no median time to show: its row says "—" there, and its note why.
func TestSeededShareRow(t *testing.T) {
	code, out, errOut := runNetemu("sweep", "share", "--duration", "1s", "--seeds", "1-2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 2 || strings.Count(lines[1], "—") != 4 || !strings.Contains(out, "share runs for the duration it is given") {
		t.Errorf("sweep share --seeds:\n%s\nwant — for the median, the spread, the model and the deviation, and the note", out)
	}
}
