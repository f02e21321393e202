package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

func TestPcapTimelinePlot(t *testing.T) {
	dir := t.TempDir()
	files := func(run string) (pcap, csvf, svg string) {
		return filepath.Join(dir, run+".pcap"), filepath.Join(dir, run+".csv"), filepath.Join(dir, run+".svg")
	}
	for _, run := range []string{"a", "b"} {
		p, c, s := files(run)
		code, _, errOut := runNetemu("run", "bulk", "--size", "300KB", "--rtt", "20ms", "--rate", "20mbit", "--queue", "20", "--pcap", p, "--timeline", c, "--plot", s)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	}
	pa, ca, sa := files("a")
	pb, _, _ := files("b")
	a, _ := os.ReadFile(pa)
	b, _ := os.ReadFile(pb)
	if len(a) < 300_000 || !bytes.Equal(a, b) {
		t.Errorf("pcap files: %d and %d bytes, equal %v; want byte-identical captures of 300 KB", len(a), len(b), bytes.Equal(a, b))
	}

	// Every packet parses as IPv4/TCP with gopacket.
	r, err := pcapgo.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		pk := gopacket.NewPacket(data, layers.LinkTypeRaw, gopacket.Default)
		if pk.ErrorLayer() != nil || pk.Layer(layers.LayerTypeTCP) == nil {
			t.Fatalf("packet %d does not parse: %v", n, pk)
		}
		if ci.Timestamp.Year() != 2000 {
			t.Fatalf("packet %d stamped %v; want virtual time from 2000-01-01", n, ci.Timestamp)
		}
		n++
	}
	if n < 200 {
		t.Errorf("%d packets in the capture", n)
	}

	// tshark reads it without a malformed packet (CI installs tshark).
	if tshark, err := exec.LookPath("tshark"); err == nil {
		out, err := exec.Command(tshark, "-r", pa, "-Y", "_ws.malformed || _ws.expert.severity >= error").Output()
		if err != nil || len(bytes.TrimSpace(out)) != 0 {
			t.Errorf("tshark: %v\n%s", err, out)
		}
		out, err = exec.Command(tshark, "-r", pa, "-T", "fields", "-e", "frame.number").Output()
		if err != nil || strings.Count(string(out), "\n") != n {
			t.Errorf("tshark read %d packets (%v); gopacket %d", strings.Count(string(out), "\n"), err, n)
		}
	} else {
		t.Log("tshark not installed; CI runs this part")
	}

	// The timeline: monotone time, sane values.
	f, err := os.Open(ca)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) < 100 || rows[0][0] != "time_ms" {
		t.Fatalf("timeline: %d rows, %v", len(rows), err)
	}
	last := -1.0
	var tcpRows, queueRows int
	for _, row := range rows[1:] {
		at, err := strconv.ParseFloat(row[0], 64)
		if err != nil || at < last {
			t.Fatalf("timeline time %q after %v", row[0], last)
		}
		last = at
		switch row[1] {
		case "tcp":
			tcpRows++
			if cw, _ := strconv.Atoi(row[3]); cw <= 0 {
				t.Errorf("cwnd %q", row[3])
			}
		case "queue":
			queueRows++
			if q, _ := strconv.Atoi(row[8]); q < 0 || q > 20 {
				t.Errorf("queue %q outside 0..20", row[8])
			}
		}
	}
	if tcpRows == 0 || queueRows == 0 {
		t.Errorf("timeline has %d tcp and %d queue rows", tcpRows, queueRows)
	}

	svg, _ := os.ReadFile(sa)
	if len(svg) < 10_000 || !bytes.Contains(svg, []byte("cwnd")) || !bytes.Contains(svg, []byte("link queue")) {
		t.Errorf("plot: %d bytes", len(svg))
	}
	// The title names the link.
	if title := "bulk — RTT 20.0 ms, rate 20mbit, queue 20 packets"; !strings.Contains(svgText(svg), title) {
		t.Errorf("plot: no title %q", title)
	}
}

// svgText is the text of an SVG figure, its lines joined by spaces (a
// title that wraps reads as one).
func svgText(svg []byte) string {
	var lines []string
	for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllSubmatch(svg, -1) {
		lines = append(lines, string(m[1]))
	}
	return strings.Join(lines, " ")
}

// loaded's figure names its flows "flow 1" to "flow 4" in the goodput
// chart and the TCP senders' alike, never by their ports.
func TestLoadedPlotNamesFlows(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "l.svg")
	if code, _, errOut := runNetemu("run", "loaded", "--duration", "1s", "--rtt", "20ms", "--rate", "20mbit", "--qdisc", "fq_codel", "--plot", svg); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	text := svgText(b)
	for _, want := range []string{"loaded (down) — RTT 20.0 ms, rate 20mbit, fq_codel",
		"all flows", "flow 4", "cwnd, flow 1", "in flight, flow 4", "probe RTT"} {
		if !strings.Contains(text, want) {
			t.Errorf("the figure lacks %q", want)
		}
	}
	if bytes.Contains(b, []byte(":7101")) {
		t.Error("the figure names a flow by its port")
	}
}

func TestSweepAndComparePlots(t *testing.T) {
	dir := t.TempDir()
	png := filepath.Join(dir, "sweep.png")
	if code, _, errOut := runNetemu("sweep", "page", "--rtt", "10ms,100ms", "--rate", "10mbit", "--plot", png); code != 0 {
		t.Fatal(errOut)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 10_000 {
		t.Errorf("sweep plot: %v", err)
	}
	if code, _, errOut := runNetemu("run", "bulk", "--plot", filepath.Join(dir, "x.gif")); code != 2 || !strings.Contains(errOut, ".svg or .png") {
		t.Errorf("--plot x.gif: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runNetemu("reproduce", "--pcap", filepath.Join(dir, "r.pcap")); code != 2 || !strings.Contains(errOut, "--pcap does not apply") {
		t.Errorf("reproduce --pcap: exit %d, %q", code, errOut)
	}
	needRoot(t)
	svg := filepath.Join(dir, "compare.svg")
	if code, _, errOut := runNetemu("compare", "bulk", "--size", "200KB", "--rtt", "10ms", "--rate", "20mbit", "--plot", svg, "--pcap", filepath.Join(dir, "c.pcap")); code != 0 {
		t.Fatal(errOut)
	}
	b, _ := os.ReadFile(svg)
	if !bytes.Contains(b, []byte("emulated: TCP senders")) || !bytes.Contains(b, []byte("kernel: TCP senders")) {
		t.Errorf("compare plot lacks one backend (%d bytes)", len(b))
	}
	if title := "bulk — RTT 10.0 ms, rate 20mbit, queue 1000 packets"; !strings.Contains(svgText(b), title) {
		t.Errorf("compare plot: no title %q", title)
	}
	for _, name := range []string{"c.pcap", "c-kernel.pcap"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() < 200_000 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestExplainNagle(t *testing.T) {
	code, out, errOut := runNetemu("explain", "nagle", "--rtt", "0", "--rate", "0", "--nodelay", "false", "--json")
	if code != 0 {
		t.Fatal(errOut)
	}
	rec := decode(t, out)[0]
	ex := rec["explain"].(map[string]any)
	ms := ex["ms"].(map[string]any)
	if held := ms["delayed-ACK holds"].(float64); held < 0.9*rec["elapsed_ms"].(float64) {
		t.Errorf("delayed-ACK holds %v ms of %v", held, rec["elapsed_ms"])
	}
	code, out, _ = runNetemu("explain", "nagle", "--rtt", "0", "--rate", "0", "--nodelay", "false")
	for _, want := range []string{"delayed-ACK holds", "100.0%", "delayed ACKs (first 6 of 49)", "held 44.0 ms, sent by its own delayed-ACK timer", "4 bytes from 198.18.0.1"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
}

func TestNoProgressWhenNotATerminal(t *testing.T) {
	code, _, errOut := runNetemu("sweep", "keepalive", "--rtt", "10ms,20ms", "--rate", "0", "--requests", "2")
	if code != 0 || errOut != "" {
		t.Errorf("exit %d, stderr %q; want nothing on stderr when it is not a terminal", code, errOut)
	}
}

// --waterfall draws one figure per case, with a variant path for each of
// several; a workload without request timings, and compare, are usage
// errors.
func TestWaterfall(t *testing.T) {
	dir := t.TempDir()
	w := filepath.Join(dir, "w.svg")
	if code, _, errOut := runNetemu("run", "page", "--proto", "h1,h2", "--resources", "8", "--waterfall", w); code != 0 {
		t.Fatal(errOut)
	}
	for _, name := range []string{"w-rtt50.0ms-10mbit.svg", "w-rtt50.0ms-10mbit-h2-tls-1.3.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"/r/07", "connect", "waiting", "last byte"} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
	if code, out, _ := runNetemu("run", "keepalive", "--requests", "3", "--mode", "reuse", "--waterfall", filepath.Join(dir, "k.png"), "--json"); code != 0 || strings.Count(out, `"path"`) != 3 {
		t.Errorf("keepalive --waterfall --json: exit %d, %s", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "bulk", "--waterfall", w}, "--waterfall: the bulk workload does not time its requests; want page or keepalive"},
		{[]string{"run", "page", "--waterfall", filepath.Join(dir, "w.gif")}, "--waterfall " + filepath.Join(dir, "w.gif") + ": want a file name ending in .svg or .png"},
		{[]string{"compare", "page", "--waterfall", w}, "--waterfall does not apply"},
		{[]string{"run", "page", "--plot", w, "--waterfall", w}, "--plot and --waterfall both write"},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stderr %q; want exit 2 and one line containing %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}
