package tcpstack

import (
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// BenchmarkNICWritePacket measures how the NIC turns one outbound
// full-sized packet (headers and payload in separate views, as gVisor's
// TCP builds them) into the contiguous bytes the link takes: a new gVisor
// view per packet (ToView, as before) against the endpoint's gather into a
// reused buffer.
func BenchmarkNICWritePacket(b *testing.B) {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 60, Payload: buffer.MakeWithData(make([]byte, 1460))})
	defer pkt.DecRef()
	pkt.TransportHeader().Push(20)
	pkt.NetworkHeader().Push(20)
	if views, _ := pkt.AsViewList(); views.Len() < 2 {
		b.Fatalf("packet in %d view; want headers and payload apart", views.Len())
	}
	sent := 0
	send := func(p []byte) { sent += len(p) }
	b.Run("ToView", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v := pkt.ToView()
			send(v.AsSlice())
			v.Release()
		}
	})
	b.Run("gather", func(b *testing.B) {
		e := &nicEndpoint{mtu: 1500, send: send}
		b.ReportAllocs()
		for b.Loop() {
			e.writePacket(pkt)
		}
	})
	if sent%1500 != 0 {
		b.Fatalf("sent %d bytes, not a multiple of 1500", sent)
	}
}
