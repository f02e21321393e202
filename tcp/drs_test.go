package tcp

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// The receive side's buffer auto-tuning as Linux 6.18 has it. The
// figures come from a 6.18 kernel's tcp_rcvbuf_grow tracepoint on a bulk
// download over 200 ms and 5 mbit.

// With timestamps the receiver's advmss is the MSS less the 12 bytes of
// the option, so the first measure is 10·1448 (tcp_init_buffer_space:
// the kernel traced space=14480) and each full segment raises
// rcv_ssthresh by 2·1448 (tcp_grow_window: the kernel's went 80480 →
// 83376).
func TestReceiveMSSWithTimestamps(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	e := c.ep.(*endpoint)
	r := &e.rcv
	if r.advmss != 1448 || r.space != 14480 {
		t.Fatalf("with timestamps: advmss %d, first measure %d; want 1448 and 14480", r.advmss, r.space)
	}
	c.send(header.TCPFlagAck, fill(1448)) // the first sets the memory ratio (tcp_measure_rcv_mss)
	before := r.ssthresh
	c.send(header.TCPFlagAck, fill(1448))
	if got := r.ssthresh - before; got != 2*1448 {
		t.Errorf("a full segment raised rcv_ssthresh by %d; want %d", got, 2*1448)
	}

	h = newHarness(t, Options{})
	c, _ = h.accept(quietPeer) // no timestamps
	if r := &c.ep.(*endpoint).rcv; r.advmss != 1460 {
		t.Errorf("without timestamps: advmss %d, want 1460", r.advmss)
	}
}

// tcp_rcvbuf_grow: a measure of 30408 bytes after 15680 asks for a window
// of 2·30408 plus 2·(2·30408)·(30408−15680)/15680, 175062 bytes (the
// kernel's window_clamp went to 175061 in that step, at its own memory
// ratio); the buffer never shrinks.
func TestRcvbufGrow(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	e := c.ep.(*endpoint)
	r := &e.rcv
	e.mu.Lock()
	defer e.mu.Unlock()
	r.space = 15680
	r.rcvbufGrow(30408)
	want := r.spaceFromWin(175062)
	if r.rcvbuf != want || r.clamp != uint32(r.winFromSpace(want)) || r.space != 30408 {
		t.Fatalf("grow 15680 → 30408: buffer %d, clamp %d, measure %d; want %d, %d, 30408",
			r.rcvbuf, r.clamp, r.space, want, r.winFromSpace(want))
	}
	r.rcvbufGrow(100)
	if r.rcvbuf != want || r.space != 100 {
		t.Errorf("a smaller measure: buffer %d, measure %d; want the buffer kept at %d and the measure 100", r.rcvbuf, r.space, want)
	}
}

// tcp_rcv_space_adjust: once per receiver RTT the measure is what was
// read in it less what still waits to be read.
func TestSpaceAdjustLessUnread(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	c.send(header.TCPFlagAck, fill(1448)) // left unread
	e := c.ep.(*endpoint)
	r := &e.rcv
	e.mu.Lock()
	defer e.mu.Unlock()
	r.rttEst = 8 * 100 * time.Millisecond
	r.spaceTime = e.now() - 100*time.Millisecond
	r.space = 1000
	r.spaceSeq = r.copied - seqnum.Value(50000)
	r.spaceAdjust()
	if r.space != 50000-1448 {
		t.Errorf("50000 bytes read in the RTT, 1448 waiting: measure %d, want %d", r.space, 50000-1448)
	}
}

// tcp_rcv_rtt_update (Linux 6.16): a smaller sample replaces the
// estimate; a larger one is smoothed in only while nothing waits to be
// read.
func TestReceiverRTTSeeksMinimum(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	e := c.ep.(*endpoint)
	r := &e.rcv
	const ms = time.Millisecond
	e.mu.Lock()
	r.rttEst = 8 * 200 * ms
	r.rttUpdate(150 * ms)
	if r.rttEst != 8*150*ms {
		t.Errorf("a 150 ms sample under 200 ms: estimate %v, want it taken at once (8×150 ms)", r.rttEst)
	}
	r.rttUpdate(300 * ms)
	if want := 8*150*ms - 150*ms + 300*ms; r.rttEst != want {
		t.Errorf("a 300 ms sample, nothing unread: estimate %v, want %v", r.rttEst, want)
	}
	e.mu.Unlock()

	c.send(header.TCPFlagAck, fill(1448)) // left unread
	e.mu.Lock()
	defer e.mu.Unlock()
	before := r.rttEst
	r.rttUpdate(400 * ms)
	if r.rttEst != before {
		t.Errorf("a larger sample with data unread moved the estimate: %v, want %v", r.rttEst, before)
	}
	r.rttUpdate(100 * ms)
	if r.rttEst != 8*100*ms {
		t.Errorf("a smaller sample with data unread: %v, want 8×100 ms", r.rttEst)
	}
}
