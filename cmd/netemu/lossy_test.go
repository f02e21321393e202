package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tsharkCount returns the number of packets of the capture file that
// match the display filter, with tshark's extra options before it.
func tsharkCount(t *testing.T, tshark, file, filter string, opts ...string) int {
	t.Helper()
	args := append([]string{"-r", file}, opts...)
	args = append(args, "-Y", filter, "-T", "fields", "-e", "frame.number")
	out, err := exec.Command(tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark %s: %v", strings.Join(args, " "), err)
	}
	return len(strings.Fields(string(out)))
}

// lossyRun runs netemu with args and --json and returns its one record.
func lossyRun(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errOut := runNetemu(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("netemu %s: exit %d, stderr %q; want exit 0", strings.Join(args, " "), code, errOut)
	}
	recs := decode(t, out)
	if len(recs) != 1 {
		t.Fatalf("netemu %s: %d records; want 1", strings.Join(args, " "), len(recs))
	}
	return recs[0]
}

// TestLossyPcapShowsRetransmissions proves that the link's impairments are
// visible to an independent reader of the capture: with --loss, tshark
// finds TCP retransmissions (the capture holds what arrived, so a lost
// segment shows up as a retransmission of data never seen) and nothing
// malformed, and the record counts the drops as losses; with --corrupt,
// tshark finds packets whose IP or TCP checksum is bad when told to check,
// no more than the record says were corrupted. It also proves that --loss
// and the same option in a --netem line give the same run.
func TestLossyPcapShowsRetransmissions(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed (CI installs it); it is needed to read the captures")
	}
	dir := t.TempDir()

	t.Run("loss", func(t *testing.T) {
		pcap := filepath.Join(dir, "loss.pcap")
		rec := lossyRun(t, "run", "bulk", "--size", "1MiB", "--loss", "2%", "--pcap", pcap)
		byReason, _ := rec["drops_by_reason"].(map[string]any)
		lost, _ := byReason["loss"].(float64)
		if lost <= 0 {
			t.Errorf("record's drops_by_reason: got %v; want a loss count above 0", rec["drops_by_reason"])
		}
		retrans := tsharkCount(t, tshark, pcap, "tcp.analysis.retransmission")
		bad := tsharkCount(t, tshark, pcap, "_ws.malformed || _ws.expert.severity >= error")
		t.Logf("%v packets lost; tshark: %d retransmissions, %d malformed or in error", lost, retrans, bad)
		if retrans == 0 {
			t.Errorf("tshark found %d retransmissions in the capture of a run with %v losses; want some", retrans, lost)
		}
		if bad != 0 {
			t.Errorf("tshark found %d malformed packets or errors; want 0", bad)
		}
	})

	t.Run("corrupt", func(t *testing.T) {
		pcap := filepath.Join(dir, "corrupt.pcap")
		rec := lossyRun(t, "run", "bulk", "--size", "1MiB", "--corrupt", "1%", "--pcap", pcap)
		corrupted, _ := rec["corrupted"].(float64)
		check := []string{"-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"}
		bad := tsharkCount(t, tshark, pcap, `tcp.checksum.status == "Bad" || ip.checksum.status == "Bad"`, check...)
		t.Logf("record: %v packets corrupted; tshark: %d with a bad checksum", corrupted, bad)
		if bad == 0 || float64(bad) > corrupted {
			t.Errorf("tshark found %d packets with a bad IP or TCP checksum; want from 1 to the %v the record says were corrupted", bad, corrupted)
		}
		// Unasked, tshark does not check checksums: the capture is
		// otherwise clean.
		if n := tsharkCount(t, tshark, pcap, "_ws.malformed || _ws.expert.severity >= error"); n != 0 {
			t.Errorf("without checksum validation tshark found %d malformed packets or errors; want 0", n)
		}
	})

	t.Run("netem line", func(t *testing.T) {
		flag := []string{"run", "bulk", "--loss", "1%", "--rtt", "50ms", "--rate", "10mbit"}
		line := []string{"run", "bulk", "--netem", "loss 1%", "--rtt", "50ms", "--rate", "10mbit"}
		for _, json := range []bool{false, true} {
			fa, la := flag, line
			if json {
				fa, la = append(fa[:len(fa):len(fa)], "--json"), append(la[:len(la):len(la)], "--json")
			}
			c1, out1, err1 := runNetemu(fa...)
			c2, out2, err2 := runNetemu(la...)
			if c1 != 0 || c2 != 0 {
				t.Fatalf("exit %d (%q) and %d (%q); want 0 and 0", c1, err1, c2, err2)
			}
			if out1 != out2 {
				t.Errorf("netemu %s printed\n%s\nnetemu %s printed\n%s\nwant the same", strings.Join(fa, " "), out1, strings.Join(la, " "), out2)
			}
		}
	})
}
