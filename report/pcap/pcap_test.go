package pcap

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

func ipv4TCP(t *testing.T, payload string) []byte {
	t.Helper()
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: []byte{198, 18, 0, 1}, DstIP: []byte{198, 18, 0, 2}}
	tcp := &layers.TCP{SrcPort: 1000, DstPort: 80, Seq: 1, ACK: true, PSH: true, Window: 1000}
	tcp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true}
	if err := gopacket.SerializeLayers(buf, opts, ip, tcp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	var file bytes.Buffer
	p, err := NewWriter(&file)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	pkts := [][]byte{ipv4TCP(t, "hello"), ipv4TCP(t, "world!")}
	p.Packet(t0.Add(1500*time.Nanosecond), pkts[0])
	p.Packet(t0.Add(40*time.Millisecond), pkts[1])
	if p.Err() != nil || p.Count() != 2 {
		t.Fatalf("err %v, count %d", p.Err(), p.Count())
	}
	r, err := pcapgo.NewReader(&file)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeRaw {
		t.Errorf("link type %v, want RAW", r.LinkType())
	}
	for i, want := range []time.Duration{1500 * time.Nanosecond, 40 * time.Millisecond} {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			t.Fatal(err)
		}
		if got := ci.Timestamp.Sub(t0); got != want {
			t.Errorf("packet %d at %v, want %v", i, got, want)
		}
		if !bytes.Equal(data, pkts[i]) {
			t.Errorf("packet %d differs", i)
		}
		pk := gopacket.NewPacket(data, layers.LinkTypeRaw, gopacket.Default)
		if pk.ErrorLayer() != nil || pk.Layer(layers.LayerTypeTCP) == nil {
			t.Errorf("packet %d does not decode as IPv4/TCP: %v", i, pk)
		}
	}
}
