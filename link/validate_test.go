package link

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
)

// Every rejection names the field and the accepted range.
func TestRejectionMessages(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Delay: -time.Millisecond}, "link: Delay is -1ms; want a duration from 0 to 24h0m0s (0 means no delay)"},
		{Config{Rate: math.Inf(1)}, "link: Rate is +Inf; want bits per second, a finite number of 0 or more (0 means unlimited)"},
		{Config{Rate: 7}, "link: Rate is 7 bit/s; want at least 8 bit/s, or 0 for unlimited"},
		{Config{Qdisc: Qdisc{Limit: -1}}, "link: Qdisc.Limit is -1; want 1 to 16777216 packets (0 means the default)"},
		{Config{Qdisc: Qdisc{LimitBytes: -1}}, "link: Qdisc.LimitBytes is -1; want at least one packet's size in bytes (0 means no byte limit)"},
		{Config{MTU: 575}, "link: MTU is 575; want 576 to 65535 bytes (0 means 1500)"},
		{Config{MTU: 65536}, "link: MTU is 65536; want 576 to 65535 bytes (0 means 1500)"},
		{Config{MTU: 9000, Qdisc: Qdisc{LimitBytes: 8999}}, "link: Qdisc.LimitBytes is 8999; want at least the MTU (9000 bytes) so that a full-sized packet fits"},
		{Config{DelayedACK: -1}, "link: DelayedACK is -1ns; want a duration from 0 to 24h0m0s (0 disables, 40ms is Linux)"},
		{Config{Outages: []Outage{{Start: 2 * time.Second, End: time.Second}}}, "link: Outages[0] is 2s to 1s; want 0 ≤ Start < End"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v; want %q", c.cfg, err, c.want)
		}
	}
	deliver := func(Dir, []byte) {}
	for _, c := range []struct {
		clk     clock.Clock
		deliver DeliverFunc
	}{{nil, deliver}, {clock.Real{}, nil}} {
		if _, err := New(Config{}, c.clk, c.deliver); err == nil || err.Error() != "link: New needs a clock and a deliver function" {
			t.Errorf("New without a clock or deliver function: %v", err)
		}
	}
}

// A SYN that reuses a flow's addresses and ports while the old
// connection's ACK is held discards that ACK, counted as superseded: no
// packet leaves the link uncounted (found by FuzzLinkSend).
func TestSYNWhileACKHeldIsCounted(t *testing.T) {
	r := interactiveRig(t)
	r.at(20*time.Millisecond, func() { r.l.Send(AtoB, dataAB(iss+5, 4)) })
	r.at(21500*time.Microsecond, func() { r.l.Send(BtoA, ackBA(iss+9)) }) // held
	r.at(30*time.Millisecond, func() { r.l.Send(AtoB, tcpPkt(ipA, ipB, aPort, bPort, 70000, 0, flagSYN, 0)) })
	r.run(200 * time.Millisecond)
	r.l.Close()
	for dir, st := range r.l.Stats() {
		if st.SentPackets != st.Packets+st.Drops.Total()+st.ACKsSuperseded {
			t.Errorf("%v: sent %d, delivered %d, dropped %d, superseded %d", Dir(dir), st.SentPackets, st.Packets, st.Drops.Total(), st.ACKsSuperseded)
		}
	}
	if st := r.l.Stats()[BtoA]; st.ACKsHeld != 1 || st.ACKsSuperseded != 1 || st.ACKsReleased != 0 {
		t.Errorf("b>a held %d, superseded %d, released %d; want the held ACK discarded by the SYN", st.ACKsHeld, st.ACKsSuperseded, st.ACKsReleased)
	}
}
