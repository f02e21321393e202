package workloads

import (
	"testing"
	"time"
)

func rpc(r Result) RPCDetail { return r.Detail.(RPCDetail) }

// At unlimited rate every call is exactly one round trip, after one for
// the handshake; the model says the same.
func TestRPCRoundTrips(t *testing.T) {
	const rtt = 50 * time.Millisecond
	r := run1(t, RPC{Calls: 10}, path(rtt, 0))
	d := rpc(r)
	if r.Elapsed != 11*rtt || r.Model.Elapsed != 11*rtt || d.Call.Median != rtt || d.Call.Max != rtt {
		t.Errorf("elapsed %v (model %v), call median %v max %v; want exactly 11 RTT and 1 RTT per call", r.Elapsed, r.Model.Elapsed, d.Call.Median, d.Call.Max)
	}
	if r.Conns != 1 || r.Requests != 10 || r.Bytes != 10*DefaultRPCResponse {
		t.Errorf("%d conns, %d requests, %d bytes", r.Conns, r.Requests, r.Bytes)
	}
}

// At a finite rate a call is a round trip plus the serialization of the
// request's and the reply's packets, headers included (20 bytes of IPv4,
// 32 of TCP with timestamps): exactly, on the virtual clock. The first
// calls also carry pure ACKs ahead of the data: a receiver quick-ACKs at
// the start of a connection (two, then one), as Linux does.
func TestRPCSerialization(t *testing.T) {
	const (
		rtt  = 20 * time.Millisecond
		rate = 1e6
		hdr  = 52
	)
	w := RPC{Calls: 5, Request: 200, Response: 1200}
	d := rpc(run1(t, w, path(rtt, rate)))
	want := rtt + time.Duration(float64((w.Request+hdr)+(w.Response+hdr))*8/rate*1e9)
	ack := time.Duration(hdr * 8 / rate * 1e9)
	for i, c := range d.Calls {
		quick := time.Duration(max(0, 2-i))
		if c != want+quick*ack {
			t.Errorf("call %d took %v; want exactly RTT + both packets at 1 mbit (%v) + %d quick ACKs (%v each)", i, c, want, quick, ack)
		}
	}
	if d.ModelCall != rtt+time.Duration(float64(w.Request+w.Response)*8/rate*1e9) {
		t.Errorf("model call %v", d.ModelCall)
	}
}
