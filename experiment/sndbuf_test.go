package experiment

import (
	"context"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// netemu's TCP fills a path whose bandwidth-delay product is past a
// third of tcp_wmem[2]: its send buffer holds what Linux's holds, data in
// GSO-sized buffers of 1280 bytes' overhead each, not one 4352-byte
// buffer a segment (tcp.sndbufLimit). 200 mbit × 100 ms is 2.5 MB; the
// per-segment reckoning capped the data in flight at 1.39 MB.
func TestNetemuSendBufferFillsALongFatPipe(t *testing.T) {
	const bdp = 200e6 / 8 * 0.1
	var most int
	c := Case{
		Workload: workloads.Bulk{Size: 16 << 20},
		Link:     link.Config{Delay: 50 * time.Millisecond, Rate: 200e6, Qdisc: link.Qdisc{Limit: 4000}},
		TCP:      tcpstack.TCPConfig{Impl: tcpstack.Netemu},
		Seed:     1,
		Exact:    true,
		Probe: func(s tcpstack.Sample) {
			if s.Local.Port() == 80 {
				most = max(most, s.InFlight)
			}
		},
	}
	r, _, err := Emulated{}.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if most < bdp {
		t.Errorf("at most %d bytes in flight (elapsed %v); want the path's %.0f", most, r.Elapsed, bdp)
	}
}
