package timeline

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// The CSV names connections and link directions alike, sender→receiver,
// and leaves the slow-start threshold empty until there is one.
func TestWriteCSV(t *testing.T) {
	zero := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	var tl Timeline
	tl.Observe(link.Event{Kind: link.EventQueue, Dir: link.BtoA, At: time.Millisecond, Time: zero.Add(time.Millisecond),
		Finish: 2 * time.Millisecond})
	server := netip.MustParseAddrPort("198.18.0.2:80")
	client := netip.MustParseAddrPort("198.18.0.1:40000")
	tl.TCP(tcpstack.Sample{At: zero.Add(3 * time.Millisecond), Local: server, Remote: client,
		Cwnd: 14480, Ssthresh: NoSsthresh, InFlight: 1448, SRTT: 50 * time.Millisecond, RTO: 250 * time.Millisecond})
	tl.TCP(tcpstack.Sample{At: zero.Add(4 * time.Millisecond), Local: server, Remote: client,
		Cwnd: 7240, Ssthresh: 7240, InFlight: 0, SRTT: 50 * time.Millisecond, RTO: 250 * time.Millisecond})
	var b bytes.Buffer
	if err := tl.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"time_ms,kind,conn,cwnd_bytes,ssthresh_bytes,inflight_bytes,srtt_ms,rto_ms,queue_packets",
		"1.000,queue,server→client,,,,,,1",
		"2.000,queue,server→client,,,,,,0",
		"3.000,tcp,198.18.0.2:80→198.18.0.1:40000,14480,,1448,50.000,250.000,",
		"4.000,tcp,198.18.0.2:80→198.18.0.1:40000,7240,7240,0,50.000,250.000,",
	}, "\n") + "\n"
	if b.String() != want {
		t.Errorf("CSV:\n%s\nwant\n%s", b.String(), want)
	}
	if DirName(link.AtoB) != "client→server" {
		t.Errorf("DirName(AtoB) = %q", DirName(link.AtoB))
	}
}
