package experiment

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/pcap"
	"github.com/netemu/netemu/workloads"
)

// Each event goes where a capture point would see it: a send at its
// sender's end (outbound), a delivery at its receiver's (inbound), a drop
// and a superseded ACK among the drops with their reason; steps inside
// the link nowhere. A named link prefixes its interfaces' names.
func TestLinkCaptureEvents(t *testing.T) {
	var file bytes.Buffer
	w, err := pcap.NewNgWriter(&file, "netemu")
	if err != nil {
		t.Fatal(err)
	}
	c := NewLinkCapture(w, CaptureLink{Name: "r1-r2", A: "r1", B: "r2"})
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	pkt := []byte{0x45, 0, 0, 20}
	for i, e := range []link.Event{
		{Kind: link.EventSend, Dir: link.AtoB},
		{Kind: link.EventHold, Dir: link.AtoB},
		{Kind: link.EventQueue, Dir: link.AtoB},
		{Kind: link.EventDeliver, Dir: link.AtoB},
		{Kind: link.EventSend, Dir: link.BtoA},
		{Kind: link.EventDrop, Dir: link.BtoA, Reason: link.DropQueueFull},
		{Kind: link.EventSupersede, Dir: link.AtoB, Held: 3 * time.Millisecond},
		{Kind: link.EventDeliver, Dir: link.BtoA},
	} {
		e.Time, e.Packet = t0.Add(time.Duration(i)*time.Millisecond), pkt
		c.Observe(e)
	}
	ifaces, recs, err := pcap.ReadNg(&file)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range ifaces {
		names = append(names, i.Name)
	}
	if want := []string{"r1-r2:r1", "r1-r2:r2", "r1-r2:drops"}; !slices.Equal(names, want) {
		t.Errorf("interfaces %q; want %q", names, want)
	}
	type seen struct {
		at      time.Duration
		iface   int
		dir     pcap.Direction
		comment string
	}
	var got []seen
	for _, r := range recs {
		got = append(got, seen{r.Time.Sub(t0), r.Interface, r.Dir, r.Comment})
	}
	want := []seen{
		{0, 0, pcap.DirOutbound, ""},
		{3 * time.Millisecond, 1, pcap.DirInbound, ""},
		{4 * time.Millisecond, 1, pcap.DirOutbound, ""},
		{5 * time.Millisecond, 2, pcap.DirUnknown, "dropped: queue-full (r2→r1)"},
		{6 * time.Millisecond, 2, pcap.DirUnknown, "dropped: delayed ACK superseded by a newer ACK after 3ms held (r1→r2)"},
		{7 * time.Millisecond, 0, pcap.DirInbound, ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("records\n%v\nwant\n%v", got, want)
	}
}

// A .pcapng capture of a lossy run holds both ends of the link and each
// drop with its reason; a .pcap is the classic file of what arrived.
// tshark, reading the sender's end, counts the retransmissions netemu
// counts.
func TestPcapngBothEndsAndDrops(t *testing.T) {
	dir := t.TempDir()
	ng, classic := filepath.Join(dir, "lossy.pcapng"), filepath.Join(dir, "lossy.pcap")
	c := Case{Workload: workloads.Bulk{Size: 1 << 20}, Link: link.Config{Delay: 25 * time.Millisecond, Rate: 10e6, Loss: link.Loss{Model: link.LossRandom, P: 0.02}}, Seed: 1}
	var recs []Record
	for _, path := range []string{ng, classic} {
		_, rec, _, err := Measure(context.Background(), Emulated{}, c, Instruments{Pcap: path})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	rec := recs[0]
	if recs[1].TraceHash != rec.TraceHash || *rec.Retransmits == 0 || rec.Drops == nil || *rec.Drops == 0 {
		t.Fatalf("runs: trace %s and %s, %v retransmissions, drops %v; want one run, twice, with losses", rec.TraceHash, recs[1].TraceHash, *rec.Retransmits, rec.Drops)
	}
	if b, _ := os.ReadFile(classic); len(b) < 4 || !bytes.Equal(b[:4], []byte{0x4d, 0x3c, 0xb2, 0xa1}) {
		t.Errorf("%s begins %x; want a classic pcap file of nanosecond timestamps", classic, b[:min(4, len(b))])
	}

	f, err := os.Open(ng)
	if err != nil {
		t.Fatal(err)
	}
	ifaces, packets, err := pcap.ReadNg(f)
	f.Close()
	if err != nil || len(ifaces) != 3 || ifaces[0].Name != "client" || ifaces[1].Name != "server" || ifaces[2].Name != "drops" {
		t.Fatalf("%s: interfaces %v, %v; want client, server, drops", ng, ifaces, err)
	}
	perIface := make([]int, 3)
	for _, p := range packets {
		perIface[p.Interface]++
		if (p.Interface == 2) != strings.HasPrefix(p.Comment, "dropped: loss (") {
			t.Fatalf("a packet of interface %s with comment %q; want the drops and only them to say why", ifaces[p.Interface].Name, p.Comment)
		}
	}
	if uint64(perIface[2]) != *rec.Drops || perIface[0] == 0 || perIface[1] == 0 {
		t.Errorf("packets at client, server and among drops: %v; want some at each end and the record's %d drops", perIface, *rec.Drops)
	}
	tsharkRetransmissions(t, ng, *rec.Retransmits)
}

// retransmitted is the display filter of what tshark calls a
// retransmission, read at the sender's end of the link, where netemu
// counts them too (report/explain's Tally: a data segment or a SYN that
// does not reach beyond what its flow sent before). At the sender's end
// the segments are in the order the sender sent them, nothing reorders
// them before the capture point, so each one tshark flags as below the
// highest sequence number sent is one the sender sent again, whatever
// tshark's guess of why: retransmission, fast retransmission (which
// tshark also marks as a retransmission), spurious retransmission, or
// out-of-order (tshark's name for a segment sent again within its
// out-of-order threshold of the highest, the connection's first RTT,
// as a RACK or recovery retransmission is). Like netemu, it leaves out
// a FIN or pure ACK sent again.
const retransmitted = "frame.packet_flags_direction == 2 && (tcp.len > 0 || tcp.flags.syn == 1) && " +
	"(tcp.analysis.retransmission || tcp.analysis.fast_retransmission || tcp.analysis.spurious_retransmission || tcp.analysis.out_of_order)"

// tsharkRetransmissions checks that tshark reads the comments of
// capture's drops and, reading each end on its own, counts want
// retransmissions sent. tshark analyses a connection across all of a
// file's interfaces, where each packet that arrived is twice; so each end
// is written to a file of its own first.
func tsharkRetransmissions(t *testing.T, capture string, want int) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed: the check of its count of retransmissions needs it")
	}
	fields := func(file, filter string, opts ...string) []string {
		args := append([]string{"-r", file, "-Y", filter}, opts...)
		out, err := exec.Command(tshark, args...).Output()
		if err != nil {
			t.Fatalf("tshark %s: %v", strings.Join(args, " "), err)
		}
		return strings.FieldsFunc(string(out), func(r rune) bool { return r == '\n' })
	}
	comments := fields(capture, `frame.interface_name == "drops"`, "-T", "fields", "-e", "frame.comment")
	for _, c := range comments {
		if !strings.HasPrefix(c, "dropped: loss (") {
			t.Errorf("tshark reads a drop's comment as %q; want its reason", c)
			break
		}
	}
	got := 0
	var each []string
	for _, end := range []string{"client", "server"} {
		one := filepath.Join(filepath.Dir(capture), end+".pcapng")
		fields(capture, `frame.interface_name == "`+end+`"`, "-w", one)
		n := len(fields(one, retransmitted, "-T", "fields", "-e", "frame.number"))
		each = append(each, fmt.Sprintf("%s %d", end, n))
		got += n
	}
	t.Logf("%d drops; tshark: retransmissions sent at %s; netemu: %d", len(comments), strings.Join(each, ", "), want)
	if got != want {
		t.Errorf("tshark counts %d retransmissions sent (%s); netemu counts %d", got, strings.Join(each, ", "), want)
	}
}
