package timeline

import (
	"bytes"
	"encoding/csv"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// The CSV names connections and link directions alike, sender→receiver,
// and leaves the slow-start threshold empty until there is one.
func TestCSV(t *testing.T) {
	zero := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	tl := NewCSV(&b)
	tl.Observe(link.Event{Kind: link.EventQueue, Dir: link.BtoA, At: time.Millisecond, Time: zero.Add(time.Millisecond),
		Finish: 2 * time.Millisecond})
	server := netip.MustParseAddrPort("198.18.0.2:80")
	client := netip.MustParseAddrPort("198.18.0.1:40000")
	tl.TCP(tcpstack.Sample{At: zero.Add(3 * time.Millisecond), Local: server, Remote: client,
		Cwnd: 14480, Ssthresh: NoSsthresh, InFlight: 1448, SRTT: 50 * time.Millisecond, RTO: 250 * time.Millisecond})
	tl.TCP(tcpstack.Sample{At: zero.Add(4 * time.Millisecond), Local: server, Remote: client,
		Cwnd: 7240, Ssthresh: 7240, InFlight: 0, SRTT: 50 * time.Millisecond, RTO: 250 * time.Millisecond})
	if err := tl.Close(); err != nil {
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

// The streamed CSV's queue rows are the occupancy the in-memory timeline
// computes from all the events at the end, row for row, in time order.
func TestCSVQueueMatchesTimeline(t *testing.T) {
	zero := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 50; trial++ {
		var mem Timeline
		var b bytes.Buffer
		c := NewCSV(&b)
		at := time.Duration(0)
		busy := [2]time.Duration{}
		for i := 0; i < 200; i++ {
			at += time.Duration(rng.IntN(3)) * time.Millisecond
			dir := link.Dir(rng.IntN(2))
			start := max(at, busy[dir])
			busy[dir] = start + time.Duration(rng.IntN(3))*time.Millisecond
			e := link.Event{Kind: link.EventQueue, Dir: dir, At: at, Time: zero.Add(at), Start: start, Finish: busy[dir]}
			mem.Observe(e)
			c.Observe(e)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		var got [2][]string
		last := -1.0
		for _, r := range rows[1:] {
			v, _ := strconv.ParseFloat(r[0], 64)
			if v < last {
				t.Fatalf("trial %d: row at %v ms after one at %v ms", trial, v, last)
			}
			last = v
			dir := link.AtoB
			if r[2] == DirName(link.BtoA) {
				dir = link.BtoA
			}
			got[dir] = append(got[dir], r[0]+" "+r[8])
		}
		for _, dir := range []link.Dir{link.AtoB, link.BtoA} {
			var want []string
			for _, p := range mem.Queue(dir) {
				want = append(want, ms(p.At)+" "+strconv.Itoa(int(p.Value)))
			}
			if strings.Join(got[dir], ",") != strings.Join(want, ",") {
				t.Fatalf("trial %d, %s:\nstreamed %v\nin memory %v", trial, DirName(dir), got[dir], want)
			}
		}
	}
}
