package link

import (
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/clock/clocktest"
)

// During an outage every packet offered in either direction is dropped
// and counted; packets already propagating arrive; at End the link
// carries packets again.
func TestOutageDropsDuringInterval(t *testing.T) {
	r := newRig(t, Config{Delay: 50 * time.Millisecond, Outages: []Outage{{Start: 10 * time.Millisecond, End: 20 * time.Millisecond}}})
	for _, at := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 15 * time.Millisecond,
		20*time.Millisecond - 1, 20 * time.Millisecond, 25 * time.Millisecond} {
		r.at(at, func() {
			r.l.Send(AtoB, rawPkt(100))
			r.l.Send(BtoA, rawPkt(100))
		})
	}
	r.run(time.Second)
	var got []time.Duration
	for _, a := range r.arrivals() {
		if a.dir == AtoB {
			got = append(got, a.at)
		}
	}
	want := []time.Duration{55 * time.Millisecond, 70 * time.Millisecond, 75 * time.Millisecond}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("a>b arrivals at %v; want %v (sent at 5ms, in flight; then from 20ms on)", got, want)
	}
	for dir, st := range r.l.Stats() {
		if st.Drops[DropOutage] != 3 || st.Drops.Total() != 3 || st.Packets != 3 || st.SentPackets != 6 {
			t.Errorf("%v: sent %d, delivered %d, drops %v; want 6, 3 and 3 outage drops", Dir(dir), st.SentPackets, st.Packets, st.Drops)
		}
	}
	if s := DropOutage.String(); s != "outage" {
		t.Errorf("DropOutage prints as %q", s)
	}
}

// Several outages, overlapping and out of order, take the link down for
// their union.
func TestOutagesUnion(t *testing.T) {
	r := newRig(t, Config{Outages: []Outage{{Start: 30 * time.Millisecond, End: 40 * time.Millisecond},
		{Start: 10 * time.Millisecond, End: 20 * time.Millisecond}, {Start: 15 * time.Millisecond, End: 25 * time.Millisecond}}})
	for ms := range 50 {
		r.at(time.Duration(ms)*time.Millisecond, func() { r.l.Send(AtoB, rawPkt(100)) })
	}
	r.run(time.Second)
	if st := r.l.Stats()[AtoB]; st.Drops[DropOutage] != 25 || st.Packets != 25 {
		t.Errorf("delivered %d, outage drops %d; want 25 and 25 (10-25ms and 30-40ms down)", st.Packets, st.Drops[DropOutage])
	}
}

// A delayed ACK the stage releases during an outage meets a dead wire.
func TestOutageDropsReleasedACK(t *testing.T) {
	r := newRig(t, Config{DelayedACK: 40 * time.Millisecond, Delay: time.Millisecond,
		Outages: []Outage{{Start: 50 * time.Millisecond, End: 70 * time.Millisecond}}})
	r.at(0, func() { handshake(r) })
	r.at(5*time.Millisecond, func() {
		r.l.Send(AtoB, tcpPkt(ipA, ipB, aPort, bPort, iss+1, irs+1, flagACK, 0))
		r.l.Send(AtoB, dataAB(iss+1, 4))
	})
	r.at(7*time.Millisecond, func() { r.l.Send(BtoA, tcpPkt(ipB, ipA, bPort, aPort, irs+1, iss+5, flagACK, 4)) })
	r.at(20*time.Millisecond, func() { r.l.Send(AtoB, dataAB(iss+5, 4)) })
	r.at(21500*time.Microsecond, func() { r.l.Send(BtoA, ackBA(iss+9)) }) // held until 61.5ms
	r.run(200 * time.Millisecond)
	st := r.l.Stats()[BtoA]
	if st.ACKsHeld != 1 || st.ACKsReleased != 1 || st.Drops[DropOutage] != 1 {
		t.Errorf("held %d, released %d, outage drops %d; want the held ACK released at 61.5ms and dropped", st.ACKsHeld, st.ACKsReleased, st.Drops[DropOutage])
	}
	for _, a := range r.arrivals() {
		if a.dir == BtoA && a.at > 10*time.Millisecond {
			t.Errorf("b>a packet arrived at %v during or after the outage", a.at)
		}
	}
}

// The link keeps its own copy of Outages: changing the caller's slice,
// or the one Config returns, changes nothing.
func TestOutagesCopied(t *testing.T) {
	outages := []Outage{{Start: 0, End: time.Hour}}
	r := newRig(t, Config{Outages: outages})
	outages[0] = Outage{Start: time.Hour, End: 2 * time.Hour}
	r.l.Config().Outages[0] = Outage{Start: time.Hour, End: 2 * time.Hour}
	r.at(time.Millisecond, func() { r.l.Send(AtoB, rawPkt(100)) })
	r.run(time.Second)
	if st := r.l.Stats()[AtoB]; st.Drops[DropOutage] != 1 {
		t.Errorf("outage drops %d; want 1: the link's outage must not change after New", st.Drops[DropOutage])
	}
}

func TestOutageValidation(t *testing.T) {
	for _, c := range []struct {
		o    []Outage
		want string
	}{
		{[]Outage{{Start: -1, End: time.Second}}, "link: Outages[0] is -1ns to 1s; want 0 ≤ Start < End, like {Start: time.Second, End: 3 * time.Second}"},
		{[]Outage{{Start: 0, End: time.Second}, {Start: 2 * time.Second, End: time.Second}}, "link: Outages[1] is 2s to 1s; want 0 ≤ Start < End"},
		{[]Outage{{Start: time.Second, End: time.Second}}, "link: Outages[0] is 1s to 1s; want 0 ≤ Start < End"},
	} {
		err := Config{Outages: c.o}.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Validate(%v) = %v; want %q", c.o, err, c.want)
		}
	}
	if err := (Config{Outages: []Outage{{Start: 0, End: 1}}}).Validate(); err != nil {
		t.Errorf("a 1ns outage at 0: %v", err)
	}
}

// The outage check allocates nothing, in an outage or out of one.
func TestOutageAllocatesNothing(t *testing.T) {
	for _, down := range []bool{false, true} {
		o := Outage{Start: time.Hour, End: 2 * time.Hour}
		if down {
			o = Outage{Start: 0, End: time.Hour}
		}
		clk := &clocktest.Manual{}
		l, err := New(Config{Outages: []Outage{{Start: 3 * time.Hour, End: 4 * time.Hour}, o}}, clk, func(Dir, []byte) {})
		if err != nil {
			t.Fatal(err)
		}
		pkt := rawPkt(1500)
		l.Send(AtoB, pkt)
		clk.Advance(time.Millisecond)
		allocs := testing.AllocsPerRun(1000, func() {
			l.Send(AtoB, pkt)
			clk.Advance(0)
		})
		if allocs != 0 {
			t.Errorf("down %v: %.1f allocations per packet; want 0", down, allocs)
		}
		l.Close()
	}
}
