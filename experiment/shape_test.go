package experiment

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/pcap"
	"github.com/netemu/netemu/topo"
	"github.com/netemu/netemu/workloads"
)

// chainCase is a parking lot of two hops, the long flow a0>b0 across
// both and one short flow on each.
func chainCase() Case {
	return Case{Workload: workloads.Bulk{Size: 300 << 10}, Link: link.Config{Delay: 10 * time.Millisecond, Rate: 10e6, Qdisc: link.Qdisc{Limit: 50}}, Seed: 1,
		Shape: &Shape{Name: "chain:2", Build: func(lc link.Config) (topo.Topology, []topo.Flow) { return topo.Chain(2, lc) }}}
}

// A link direction crossed by several flows says how they shared it: the
// long flow and each hop's short flow on that hop, their shares adding
// up to 1, Jain's index of their goodputs; a link one flow crosses says
// nothing.
func TestShapeLinkShares(t *testing.T) {
	r, _, err := Emulated{}.Run(context.Background(), chainCase())
	if err != nil {
		t.Fatal(err)
	}
	d := r.Detail.(ShapeDetail)
	want := map[string][]string{"hop1": {"a0>b0", "a1>b1"}, "hop2": {"a0>b0", "a2>b2"}}
	for _, l := range d.Links {
		flows, shared := want[l.Link]
		if !shared {
			if len(l.Shares) != 0 {
				t.Errorf("%s %s: shares %+v; one flow crosses it", l.Link, l.Dir, l.Shares)
			}
			continue
		}
		var sum float64
		var got []string
		for _, s := range l.Shares {
			got = append(got, s.Flow)
			sum += s.Share
		}
		if len(got) != 2 || got[0] != flows[0] || got[1] != flows[1] || sum < 0.999 || sum > 1.001 || l.Jain <= 0.5 || l.Jain > 1 {
			t.Errorf("%s %s: shares %+v (sum %v), Jain %v; want %v sharing it", l.Link, l.Dir, l.Shares, sum, l.Jain, flows)
		}
	}
	// Each flow's goodput over time adds up to what it received.
	series := d.Series()
	if len(series) != len(d.Flows) {
		t.Fatalf("%d goodput series for %d flows", len(series), len(d.Flows))
	}
	for i, s := range series {
		var bits float64
		for _, v := range s.Values[:len(s.Values)-1] { // the last step repeats the one before
			bits += v * goodputBin.Seconds()
		}
		got, want := bits/8, float64(d.Flows[i].Result.Bytes)
		if got < 0.9*want || got > 1.1*want { // the samples may miss a connection's last ACKs
			t.Errorf("flow %s: its series add up to %.0f bytes; it received %.0f", s.Name, got, want)
		}
	}
}

// A pcapng capture of a shape holds every link: both ends and the drops
// of each, named by the link.
func TestShapePcapngEveryLink(t *testing.T) {
	c := chainCase()
	path := filepath.Join(t.TempDir(), "chain.pcapng")
	if _, _, _, err := Measure(context.Background(), Emulated{}, c, Instruments{Pcap: path}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ifaces, recs, err := pcap.ReadNg(f)
	if err != nil {
		t.Fatal(err)
	}
	top, _ := topo.Chain(2, c.Link)
	names := map[string]bool{}
	for _, i := range ifaces {
		names[i.Name] = true
	}
	for _, l := range top.Links {
		for _, end := range []string{l.A, l.B, "drops"} {
			if !names[l.Label()+":"+end] {
				t.Errorf("no interface %s:%s among %d", l.Label(), end, len(ifaces))
			}
		}
	}
	if len(ifaces) != 3*len(top.Links) || len(recs) == 0 {
		t.Errorf("%d interfaces and %d records; want %d interfaces and the run's packets", len(ifaces), len(recs), 3*len(top.Links))
	}
}

// A timeline of a shape has the queue of every link with a rate, named
// by the link.
func TestShapeTimelineEveryLink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chain.csv")
	if _, _, _, err := Measure(context.Background(), Emulated{}, chainCase(), Instruments{Timeline: path}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{",queue,hop1 r0→r1,", ",queue,hop1 r1→r0,", ",queue,hop2 r1→r2,", ",queue,hop2 r2→r1,", ",tcp,198.18."} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the timeline has no row with %q", want)
		}
	}
}
