package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

func TestNgRoundTrip(t *testing.T) {
	var file bytes.Buffer
	p, err := NewNgWriter(&file, "netemu")
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Interface("client", "the client's end"), p.Interface("server", "")
	if a != 0 || b != 1 {
		t.Fatalf("interfaces numbered %d, %d; want 0, 1", a, b)
	}
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := []Record{
		{Interface: a, Time: t0.Add(1500 * time.Nanosecond), Packet: ipv4TCP(t, "hello"), Dir: DirOutbound},
		{Interface: b, Time: t0.Add(40 * time.Millisecond), Packet: ipv4TCP(t, "hello"), Dir: DirInbound},
		{Interface: b, Time: t0.Add(41 * time.Millisecond), Packet: ipv4TCP(t, "world!"), Comment: "dropped: loss (client→server)"},
	}
	for _, r := range recs {
		p.Write(r)
	}
	if p.Err() != nil || p.Count() != 3 {
		t.Fatalf("err %v, count %d; want none and 3", p.Err(), p.Count())
	}

	// gopacket reads the interfaces, each packet's bytes, instant and
	// interface.
	r, err := pcapgo.NewNgReader(bytes.NewReader(file.Bytes()), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range recs {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if !bytes.Equal(data, rec.Packet) || !ci.Timestamp.Equal(rec.Time) || ci.InterfaceIndex != rec.Interface || ci.Length != len(rec.Packet) {
			t.Errorf("packet %d: %d bytes at %v on interface %d; want %d at %v on %d", i, len(data), ci.Timestamp, ci.InterfaceIndex, len(rec.Packet), rec.Time, rec.Interface)
		}
	}
	if _, _, err := r.ReadPacketData(); err != io.EOF {
		t.Errorf("after the packets: %v; want EOF", err)
	}
	if r.NInterfaces() != 2 {
		t.Fatalf("%d interfaces; want 2", r.NInterfaces())
	}
	for i, want := range []string{"client", "server"} {
		intf, _ := r.Interface(i)
		if intf.Name != want || intf.LinkType != layers.LinkTypeRaw || intf.SnapLength != SnapLen {
			t.Errorf("interface %d: %q, %v, snap %d; want %q, RAW, %d", i, intf.Name, intf.LinkType, intf.SnapLength, want, SnapLen)
		}
	}
	if desc, _ := r.Interface(0); desc.Description != "the client's end" {
		t.Errorf("interface 0 described %q", desc.Description)
	}

	// What gopacket does not read: the writing application, each
	// packet's direction flags and comment.
	if _, _, opts, err := ngBlockAt(file.Bytes(), 0); err != nil || string(option(opts, optSHBUserAppl)) != "netemu" {
		t.Errorf("section header: application %q, %v; want netemu", option(opts, optSHBUserAppl), err)
	}
	ifaces, got, err := ReadNg(bytes.NewReader(file.Bytes()))
	if err != nil || len(ifaces) != 2 || ifaces[0] != (NgInterface{"client", "the client's end"}) || len(got) != len(recs) {
		t.Fatalf("ReadNg: %v, %v, %d records; want both interfaces and %d records", err, ifaces, len(got), len(recs))
	}
	for i, rec := range recs {
		g := got[i]
		if g.Interface != rec.Interface || !g.Time.Equal(rec.Time) || !bytes.Equal(g.Packet, rec.Packet) || g.Dir != rec.Dir || g.Comment != rec.Comment {
			t.Errorf("packet %d read back as %+v; want %+v", i, g, rec)
		}
	}
	if _, _, opts, _ := ngBlockAt(file.Bytes(), len(file.Bytes())-int(binary.LittleEndian.Uint32(file.Bytes()[len(file.Bytes())-4:]))); option(opts, optEPBFlags) != nil {
		t.Error("a packet of no direction has flags; want none written")
	}
	tsharkReads(t, file.Bytes())
}

// tsharkReads checks that tshark reads file's interfaces, directions and
// comments as TestNgRoundTrip wrote them; it skips the test, whose other
// checks are done, where tshark is not installed.
func tsharkReads(t *testing.T, file []byte) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed: the check of how it reads the file needs it")
	}
	path := filepath.Join(t.TempDir(), "x.pcapng")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, "-r", path, "-T", "fields", "-E", "separator=|",
		"-e", "frame.interface_name", "-e", "frame.packet_flags_direction", "-e", "frame.comment", "-e", "frame.time_epoch").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	want := "client|0x00000002||946684800.000001500\n" +
		"server|0x00000001||946684800.040000000\n" +
		"server||dropped: loss (client→server)|946684800.041000000\n"
	if string(out) != want {
		t.Errorf("tshark read\n%s\nwant\n%s", out, want)
	}
}

// A record of an interface not added is an error, kept, and nothing is
// written after it; a failed write is kept too.
func TestNgErrors(t *testing.T) {
	var file bytes.Buffer
	p, err := NewNgWriter(&file, "")
	if err != nil {
		t.Fatal(err)
	}
	n := file.Len()
	p.Write(Record{Interface: 0, Packet: []byte{0x45}})
	if p.Err() == nil || file.Len() != n || p.Interface("late", "") != -1 {
		t.Errorf("a packet of no interface: err %v, %d bytes written; want an error, nothing written, no interface after", p.Err(), file.Len()-n)
	}

	full := errors.New("disk full")
	if _, err := NewNgWriter(failingWriter{full}, "netemu"); !errors.Is(err, full) {
		t.Errorf("header to a failing writer: %v; want it wrapped", err)
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

// ReadNg takes any bytes without panicking, and reads back whatever
// NgWriter wrote.
func FuzzReadNg(f *testing.F) {
	var file bytes.Buffer
	p, _ := NewNgWriter(&file, "netemu")
	p.Write(Record{Interface: p.Interface("a", "an end"), Packet: []byte{0x45, 0, 0, 20}, Dir: DirInbound, Comment: "c"})
	f.Add(file.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		ifaces, recs, err := ReadNg(bytes.NewReader(b))
		for _, r := range recs {
			if err == nil && (r.Interface < 0 || r.Interface >= len(ifaces)) {
				t.Fatalf("a record of interface %d, of %d", r.Interface, len(ifaces))
			}
		}
	})
}
