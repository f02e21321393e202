package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"
)

// help, <command> --help and help <command|workload> print to stdout and
// exit 0; each command's help names its example and flags.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"help", "run"}, {"run", "--help"}, {"run", "bulk", "-h"}, {"help", "reproduce"}, {"reproduce", "--help"}, {"help", "nagle"}, {"version", "--help"}} {
		code, out, errOut := runCmd(args...)
		if code != 0 || errOut != "" || out == "" {
			t.Errorf("netemu %s: exit %d, stderr %q, %d bytes on stdout; want help on stdout and exit 0", strings.Join(args, " "), code, errOut, len(out))
		}
		if len(args) == 2 && args[0] == "help" && args[1] != "nagle" && !strings.Contains(out, "Example:") {
			t.Errorf("netemu %s has no example:\n%s", strings.Join(args, " "), out)
		}
	}
	if code, _, errOut := runCmd("help", "video"); code != 2 || !strings.Contains(errOut, `help "video"`) {
		t.Errorf("help video: exit %d, %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCmd("version")
	if code != 0 || !strings.HasPrefix(out, "netemu ") || !strings.Contains(out, "go1.") || !strings.Contains(out, "gvisor.dev/gvisor ") {
		t.Errorf("version: exit %d, %q", code, out)
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
		code, out, errOut := runCmd(c.args...)
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

// A rate in tc's bytes-per-second units gets a note saying what it means.
func TestBytesPerSecondNote(t *testing.T) {
	code, _, errOut := runCmd("run", "bulk", "--size", "100KB", "--rate", "10Mbps")
	if code != 0 || !strings.Contains(errOut, "--rate 10Mbps is bytes per second") || !strings.Contains(errOut, "80mbit") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// SIGTERM, as timeout, systemd and CI runners send it, stops a run like
// SIGINT: a message, exit status 143, and a pcap file that is complete and
// readable.
func TestSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "netemu")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pcap := filepath.Join(dir, "x.pcap")
	cmd := exec.Command(bin, "run", "bulk", "--size", "1GiB", "--rate", "50mbit", "--clock", "real", "--pcap", pcap)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
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
	code, out, errOut := runCmd("run", "page", "--rtt", "10h")
	if code != 2 || out != "" || !strings.Contains(errOut, "10h0m0s cannot complete a TCP handshake") || !strings.Contains(errOut, "want an RTT under 2m7s") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// A link too slow for TCP's timers ends in a reset, and the error says
// why in the flags' terms.
func TestLinkTooSlowSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates hours of a 1 kbit link")
	}
	code, _, errOut := runCmd("run", "bulk", "--rate", "1kbit")
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "too slow for TCP's timers") || !strings.Contains(errOut, "at 1kbit") {
		t.Errorf("exit %d, stderr %q; want one line saying the link is too slow for TCP's timers", code, errOut)
	}
}

// h3 runs on the real clock only: on the virtual clock (the default) it
// is a usage error that names the reason and the fix.
func TestH3NeedsRealClock(t *testing.T) {
	for _, args := range [][]string{{"run", "page", "--proto", "h3"}, {"sweep", "page", "--proto", "h1,h3", "--rtt", "10ms,20ms"}} {
		code, out, errOut := runCmd(args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "quic-go reads the wall clock") || !strings.Contains(errOut, "--clock real") {
			t.Errorf("netemu %s: exit %d, stderr %q; want exit 2 and one line naming the reason and --clock real", strings.Join(args, " "), code, errOut)
		}
	}
}
