package link

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/clock/clocktest"
)

func TestQdiscValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Qdisc: Qdisc{Kind: FIFO, Params: CoDelParams{Target: 5}}}, "link: Qdisc.Params is link.CoDelParams, but fifo takes none; it reads Limit, LimitBytes"},
		{Config{Qdisc: Qdisc{Kind: CoDel, Params: FQCoDelParams{Flows: 5}}},
			"Qdisc.Params is link.FQCoDelParams, but codel takes link.CoDelParams (nil means its defaults); it reads Limit, Target, Interval, ECN"},
		{Config{Qdisc: Qdisc{Kind: CoDel, LimitBytes: 3000}}, "Qdisc.LimitBytes is set, but codel has no such parameter; it reads Limit, Target, Interval, ECN"},
		{Config{Qdisc: Qdisc{Kind: PFIFOHeadDrop, Params: CoDelParams{ECN: ECNOn}}}, "Qdisc.Params is link.CoDelParams, but pfifo_head_drop takes none; it reads Limit"},
		{Config{Qdisc: Qdisc{Kind: FQCoDel, LimitBytes: 3000}}, "it reads Limit, Flows, Quantum, Target, Interval, MemoryLimit, ECN, DropBatch"},
		{Config{Qdisc: Qdisc{Kind: 9}}, "Qdisc.Kind is 9; want one of fifo, codel, fq_codel, pfifo_head_drop"},
		{Config{BtoA: &Config{Qdisc: Qdisc{Kind: FQCoDel, Params: FQCoDelParams{CoDelParams: CoDelParams{Target: -1}}}}}, "BtoA.Qdisc.Target is -1ns"},
		{Config{Qdisc: Qdisc{Kind: CoDel, Params: CoDelParams{ECN: 3}}}, "Qdisc.ECN is 3; want ECNDefault, ECNOff or ECNOn"},
		{Config{Qdisc: Qdisc{Kind: FQCoDel, Params: FQCoDelParams{Quantum: 10}}}, "Quantum is 10"},
		{Config{BtoA: &Config{Qdisc: Qdisc{LimitBytes: 1000}}}, "BtoA.Qdisc.LimitBytes is 1000; want at least the MTU (1500 bytes)"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Validate() = %v; want an error with %q", c.cfg, err, c.want)
		}
	}
	// A link's own Config, defaults filled in, is valid again.
	l, err := New(Config{Rate: 1e6, Qdisc: Qdisc{Kind: CoDel}, BtoA: &Config{Rate: 1e6, Qdisc: Qdisc{Kind: FQCoDel}}}, &clocktest.Manual{}, func(Dir, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Config().Validate(); err != nil {
		t.Errorf("the link's Config() does not validate: %v", err)
	}
}

// Per direction: BtoA may have its own qdisc.
func TestQdiscPerDirection(t *testing.T) {
	cfg := Config{Rate: 10e6, BtoA: &Config{Rate: 10e6, Qdisc: Qdisc{Kind: CoDel}}}
	l, err := New(cfg, &clocktest.Manual{}, func(Dir, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.dirs[AtoB].qd.(*fifo); !ok {
		t.Errorf("a>b has %T; want the FIFO", l.dirs[AtoB].qd)
	}
	if _, ok := l.dirs[BtoA].qd.(*codelQueue); !ok {
		t.Errorf("b>a has %T; want codel", l.dirs[BtoA].qd)
	}
}

// Close counts the packets waiting in a qdisc as DropClosed, with those
// on the wire.
func TestCloseDropsQdiscPackets(t *testing.T) {
	for _, q := range []Qdisc{{Kind: CoDel}, {Kind: FQCoDel}, {Kind: PFIFOHeadDrop}} {
		r := newRig(t, Config{Rate: 1e6, Qdisc: q})
		r.at(0, func() {
			for i := range 5 {
				r.l.Send(AtoB, numbered(i, 1000))
			}
		})
		r.run(time.Millisecond)
		r.l.Close()
		r.run(time.Second)
		if st := r.l.Stats()[AtoB]; st.Drops[DropClosed] != 5 || len(r.arrivals()) != 0 {
			t.Errorf("%v: %d closed drops, %d delivered; want 5 and 0", q, st.Drops[DropClosed], len(r.arrivals()))
		}
	}
}

// pfifo_head_drop, full, takes the new packet and drops its oldest
// waiting one; the packet on the wire is not counted, as in Linux.
func TestHeadDrop(t *testing.T) {
	// 1000-byte packets at 1 Mbit/s: 8ms each on the wire.
	r := newRig(t, Config{Rate: 1e6, Qdisc: Qdisc{Kind: PFIFOHeadDrop, Limit: 3}})
	var dropped []int
	r.l.Observe(func(e Event) {
		if e.Kind == EventDrop {
			if e.Reason != DropOverlimit {
				t.Errorf("drop reason %v; want overlimit", e.Reason)
			}
			dropped = append(dropped, number(e.Packet))
		}
	})
	r.at(0, func() {
		for i := range 7 {
			r.l.Send(AtoB, numbered(i, 1000))
		}
	})
	r.run(time.Second)
	var got []int
	for _, a := range r.arrivals() {
		got = append(got, number(a.b))
	}
	// 0 goes on the wire at once; 1, 2, 3 fill the queue; 4, 5 and 6
	// each push out the oldest waiting.
	if want := []int{0, 4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("delivered %v; want %v", got, want)
	}
	if want := []int{1, 2, 3}; !slices.Equal(dropped, want) {
		t.Errorf("dropped %v; want %v", dropped, want)
	}
	st := r.l.Stats()[AtoB]
	if st.Drops[DropOverlimit] != 3 || st.PeakQueuePackets != 4 {
		t.Errorf("%d overlimit drops, peak %d packets; want 3 and 4 (3 waiting, 1 on the wire)", st.Drops[DropOverlimit], st.PeakQueuePackets)
	}
	// The default limit is Linux's, 1000 packets.
	if q := (Config{Qdisc: Qdisc{Kind: PFIFOHeadDrop}}).WithDefaults().Qdisc; q.Limit != DefaultHeadDropLimit {
		t.Errorf("default limit %d; want %d", q.Limit, DefaultHeadDropLimit)
	}
}

// WithDefaults fills in both directions and leaves the link's own fields
// out of BtoA, so that its result validates.
func TestWithDefaults(t *testing.T) {
	c := Config{Rate: 1e6, Qdisc: Qdisc{LimitBytes: 150000}, BtoA: &Config{Rate: 1e6, Qdisc: Qdisc{Kind: FQCoDel}}}.WithDefaults()
	if c.MTU != DefaultMTU || c.Qdisc != (Qdisc{Limit: DefaultQueuePackets, LimitBytes: 150000}) {
		t.Errorf("a>b: MTU %d, qdisc %+v", c.MTU, c.Qdisc)
	}
	if b := c.BtoA; b.MTU != 0 || b.Qdisc.Params != (FQCoDelParams{CoDelParams{DefaultTarget, DefaultInterval, ECNOn}, DefaultFlows, DefaultMTU, DefaultMemoryLimit, DefaultDropBatch}) ||
		b.Qdisc.Limit != DefaultFQCoDelLimit {
		t.Errorf("b>a: MTU %d, qdisc %+v", b.MTU, b.Qdisc)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}
