package timeline

import (
	"bytes"
	"encoding/csv"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// The CSV names connections and link directions alike, sender→receiver,
// and leaves the slow-start threshold empty until there is one; a TCP
// with tcp_info has its rates in bits per second, BBR its state (no min
// RTT before a sample), gVisor's TCP neither.
func TestCSV(t *testing.T) {
	zero := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	tl := NewCSV(&b)
	tl.Observe(link.Event{Kind: link.EventQueue, Dir: link.BtoA, At: time.Millisecond, Time: zero.Add(time.Millisecond),
		Finish: 2 * time.Millisecond})
	server := netip.MustParseAddrPort("198.18.0.2:80")
	client := netip.MustParseAddrPort("198.18.0.1:40000")
	tl.TCP(tcpstack.Sample{At: zero.Add(3 * time.Millisecond), Local: server, Remote: client,
		Cwnd: 14480, Ssthresh: NoSsthresh, InFlight: 1448, SRTT: 50 * time.Millisecond, RTO: 250 * time.Millisecond, RcvWnd: 65535})
	tl.TCP(tcpstack.Sample{At: zero.Add(4 * time.Millisecond), Local: server, Remote: client,
		Cwnd: 7240, Ssthresh: 7240, InFlight: 0, SRTT: 50 * time.Millisecond, RTO: 250 * time.Millisecond, RcvWnd: 64000, RcvSsthresh: 64000,
		CAState: "Recovery", Sacked: 3, Lost: 1, Retrans: 1, Delivered: 12,
		PacingRate: 1_250_000, DeliveryRate: 1_000_000, DeliveryRateAppLimited: true})
	tl.TCP(tcpstack.Sample{At: zero.Add(5 * time.Millisecond), Local: server, Remote: client,
		Cwnd: 14480, Ssthresh: NoSsthresh, InFlight: 1448, SRTT: 50 * time.Millisecond, RTO: 250 * time.Millisecond, RcvWnd: 64000, RcvSsthresh: 64000,
		CAState: "Open", Delivered: 13, PacingRate: 1_265_625, DeliveryRate: 1_250_000,
		BBR: tcpstack.BBRState{Mode: tcpstack.BBRProbeBW, Bandwidth: 1_250_000, MinRTT: 40 * time.Millisecond, PacingGain: 1.25, CwndGain: 2, LongTerm: true}})
	tl.TCP(tcpstack.Sample{At: zero.Add(6 * time.Millisecond), Local: server, Remote: client,
		Cwnd: 14480, Ssthresh: NoSsthresh, InFlight: 0, SRTT: 50 * time.Millisecond, RTO: 250 * time.Millisecond, RcvWnd: 64000, RcvSsthresh: 64000,
		CAState: "Open", Delivered: 13, PacingRate: 3_608_398,
		BBR: tcpstack.BBRState{Mode: tcpstack.BBRStartup, PacingGain: 739.0 / 256, CwndGain: 739.0 / 256}})
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	// The columns up to link_rate_bps are those the CSV has always had,
	// in their order: the later ones follow them.
	want := strings.Join([]string{
		"time_ms,kind,conn,cwnd_bytes,ssthresh_bytes,inflight_bytes,srtt_ms,rto_ms,queue_packets,rcv_wnd_bytes,rcv_ssthresh_bytes,ca_state,sacked_packets,lost_packets,retrans_packets,delivered_packets,link_rate_bps," +
			"pacing_rate_bps,delivery_rate_bps,delivery_rate_app_limited,bbr_mode,bbr_bw_bps,bbr_min_rtt_ms,bbr_pacing_gain,bbr_cwnd_gain,bbr_long_term",
		"1.000,queue,server→client,,,,,,1,,,,,,,,,,,,,,,,,",
		"2.000,queue,server→client,,,,,,0,,,,,,,,,,,,,,,,,",
		"3.000,tcp,198.18.0.2:80→198.18.0.1:40000,14480,,1448,50.000,250.000,,65535,,,,,,,,,,,,,,,,",
		"4.000,tcp,198.18.0.2:80→198.18.0.1:40000,7240,7240,0,50.000,250.000,,64000,64000,Recovery,3,1,1,12,,10000000,8000000,1,,,,,,",
		"5.000,tcp,198.18.0.2:80→198.18.0.1:40000,14480,,1448,50.000,250.000,,64000,64000,Open,0,0,0,13,,10125000,10000000,0,probe_bw,10000000,40.000,1.25,2,1",
		"6.000,tcp,198.18.0.2:80→198.18.0.1:40000,14480,,0,50.000,250.000,,64000,64000,Open,0,0,0,13,,28867184,0,0,startup,0,,2.88671875,2.88671875,0",
	}, "\n") + "\n"
	if b.String() != want {
		t.Errorf("CSV:\n%s\nwant\n%s", b.String(), want)
	}
	if DirName(link.AtoB) != "client→server" {
		t.Errorf("DirName(AtoB) = %q", DirName(link.AtoB))
	}
}

// occupancyOf is the queue occupancy computed from all the events at the
// end: every arrival and departure sorted, one point per instant.
func occupancyOf(events []link.Event, dir link.Dir) []Point {
	type edge struct {
		at    time.Duration
		delta int
	}
	var edges []edge
	for _, e := range events {
		if e.Kind == link.EventQueue && e.Dir == dir && e.Finish > e.At {
			edges = append(edges, edge{e.At, +1}, edge{e.Finish, -1})
		}
	}
	sort.SliceStable(edges, func(i, j int) bool { return edges[i].at < edges[j].at })
	var pts []Point
	n := 0
	for i, e := range edges {
		n += e.delta
		if i+1 < len(edges) && edges[i+1].at == e.at {
			continue
		}
		pts = append(pts, Point{e.at, float64(n)})
	}
	return pts
}

// The streamed CSV's queue rows and the in-memory timeline's are the
// occupancy computed from all the events at the end, point for point, in
// time order.
func TestQueueOccupancy(t *testing.T) {
	zero := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 50; trial++ {
		var mem Timeline
		var b bytes.Buffer
		c := NewCSV(&b)
		var events []link.Event
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
			events = append(events, e)
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
			for _, p := range occupancyOf(events, dir) {
				want = append(want, ms(p.At)+" "+strconv.Itoa(int(p.Value)))
			}
			if strings.Join(got[dir], ",") != strings.Join(want, ",") {
				t.Fatalf("trial %d, %s:\nstreamed %v\nwant %v", trial, DirName(dir), got[dir], want)
			}
			if m, w := mem.Queue(dir), occupancyOf(events, dir); !slices.Equal(m, w) {
				t.Fatalf("trial %d, %s:\nin memory %v\nwant %v", trial, DirName(dir), m, w)
			}
		}
	}
}

// A long run's timeline keeps at most about MaxPoints per series, with
// the queue's peak, each connection's first and last samples, and points
// spread over the whole run.
func TestTimelineThins(t *testing.T) {
	zero := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	server := netip.MustParseAddrPort("198.18.0.2:80")
	client := netip.MustParseAddrPort("198.18.0.1:40000")
	var tl Timeline
	const n = 10 * MaxPoints
	peakAt := 7 * MaxPoints
	for i := range n {
		at := time.Duration(i) * time.Millisecond
		// One packet queued at a time, each for 0.5 ms; at peakAt a burst of 5.
		burst := 1
		if i == peakAt {
			burst = 5
		}
		for range burst {
			tl.Observe(link.Event{Kind: link.EventQueue, Dir: link.BtoA, At: at, Time: zero.Add(at), Finish: at + time.Millisecond/2})
		}
		tl.TCP(tcpstack.Sample{At: zero.Add(at), Local: server, Remote: client, Cwnd: i})
	}
	q := tl.Queue(link.BtoA)
	if len(q) > MaxPoints+2 || len(q) < MaxPoints/2 {
		t.Errorf("queue series has %d points; want about %d", len(q), MaxPoints)
	}
	peak := slices.MaxFunc(q, func(a, b Point) int { return int(a.Value - b.Value) })
	if peak.Value != 5 {
		t.Errorf("queue peak %v kept; want 5", peak)
	}
	if last := q[len(q)-1]; last.Value != 0 || last.At != time.Duration(n-1)*time.Millisecond+time.Millisecond/2 {
		t.Errorf("last queue point %v; want the queue empty at the last departure", last)
	}
	conns := tl.Conns()
	if len(conns) != 1 {
		t.Fatalf("%d connections", len(conns))
	}
	s := conns[0].Samples
	if len(s) > MaxPoints+1 || len(s) < MaxPoints/2 || s[0].Cwnd != 0 || s[len(s)-1].Cwnd != n-1 {
		t.Errorf("%d samples from cwnd %d to %d; want about %d from 0 to %d", len(s), s[0].Cwnd, s[len(s)-1].Cwnd, MaxPoints, n-1)
	}
	for i := 1; i < len(s); i++ {
		if gap := s[i].Cwnd - s[i-1].Cwnd; gap <= 0 || gap > 16 {
			t.Fatalf("samples %d and %d are %d apart; want evenly thinned", i-1, i, gap)
		}
	}
}

// A direction whose rate is a trace gets a link_rate row per 100 ms: what
// the trace offers over the 100 ms from the row's time.
func TestCSVTraceRates(t *testing.T) {
	tr, err := link.StepsTrace([]float64{12e6, 24e6}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	tl := NewCSV(&b)
	tl.Traces(nil, tr)
	zero := time.Unix(0, 0)
	tl.Observe(link.Event{Kind: link.EventSend, Dir: link.AtoB, At: 0, Time: zero})
	tl.Observe(link.Event{Kind: link.EventSend, Dir: link.AtoB, At: 250 * time.Millisecond, Time: zero.Add(250 * time.Millisecond)})
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	var rates []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, ",link_rate,") {
			rates = append(rates, l)
		}
	}
	want := []string{
		"0.000,link_rate,server→client,,,,,,,,,,,,,,12000000,,,,,,,,,",
		"100.000,link_rate,server→client,,,,,,,,,,,,,,24000000,,,,,,,,,",
		"200.000,link_rate,server→client,,,,,,,,,,,,,,12000000,,,,,,,,,",
	}
	if strings.Join(rates, "\n") != strings.Join(want, "\n") {
		t.Errorf("link_rate rows:\n%s\nwant\n%s", strings.Join(rates, "\n"), strings.Join(want, "\n"))
	}
}

// A topology's links each write their queue rows, named by link and
// direction, in time order with one another's.
func TestCSVLinks(t *testing.T) {
	zero := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	tl := NewCSV(&b)
	hop1, hop2 := tl.Link("hop1", "r0", "r1"), tl.Link("hop2", "r1", "r2")
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// hop1 queues a packet at 1 ms leaving at 5 ms; hop2 one at 2 ms
	// leaving at 3 ms, and one backwards at 6 ms leaving at 7.
	hop1(link.Event{Kind: link.EventQueue, Dir: link.AtoB, At: ms(1), Time: zero.Add(ms(1)), Finish: ms(5)})
	hop2(link.Event{Kind: link.EventQueue, Dir: link.AtoB, At: ms(2), Time: zero.Add(ms(2)), Finish: ms(3)})
	hop2(link.Event{Kind: link.EventQueue, Dir: link.BtoA, At: ms(6), Time: zero.Add(ms(6)), Finish: ms(7)})
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n")[1:] {
		f := strings.Split(line, ",")
		got = append(got, f[0]+" "+f[2]+" "+f[8])
	}
	want := []string{"1.000 hop1 r0→r1 1", "2.000 hop2 r1→r2 1", "3.000 hop2 r1→r2 0", "5.000 hop1 r0→r1 0", "6.000 hop2 r2→r1 1", "7.000 hop2 r2→r1 0"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
