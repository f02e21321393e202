package link

import "time"

// The receiver's window growth, part of the delayed-ACK stage.
//
// A Linux receiver ACKs at once every data segment that lets its receive
// window grow: tcp_event_data_recv calls tcp_grow_window, which raises
// rcv_ssthresh by max(2·advmss, 2·len) while there is room under the
// window clamp and sets icsk_ack.quick |= 1, so the next ACK is a quick
// one. The clamp follows the receive buffer, which tcp_rcv_space_adjust
// grows once per receiver RTT from the bytes the application read in the
// last one (dynamic right-sizing). In slow start the clamp outruns
// rcv_ssthresh, so every segment is ACKed at once; the sender's HyStart
// then sees ACK trains one segment apart, as on Linux. Once the rate
// settles, rcv_ssthresh catches up and ACKs are delayed again.
//
// The model follows tcp_input.c (tcp_grow_window, tcp_rcv_space_adjust,
// tcp_rcv_rtt_update) and tcp_output.c (tcp_select_initial_window) with
// Linux's defaults (tcp_rmem 4096 131072 6291456, a scaling ratio of 50 %
// between buffer and window, tcp_app_win 31), and assumes the application
// reads data as it arrives. The receiver's RTT estimate is the data
// segment's one-way sojourn plus the ACK path's delay.

const (
	rmemDefault  = 131072  // tcp_rmem[1]: the initial receive buffer
	rmemMax      = 6291456 // tcp_rmem[2]: autotuning's ceiling
	scalingRatio = 128     // TCP_DEFAULT_SCALING_RATIO: window = buffer × 128/256
	initCwnd     = 10      // TCP_INIT_CWND
)

func winFromSpace(space int) int { return space * scalingRatio >> 8 }
func spaceFromWin(win int) int   { return win << 8 / scalingRatio }

// window is the receive-window state of one flow's receiver.
type window struct {
	started     bool
	rcvSsthresh int // tp->rcv_ssthresh
	clamp       int // tp->window_clamp
	rcvbuf      int // sk->sk_rcvbuf
	space       int // tp->rcvq_space.space: bytes read in the last measured RTT
	copied      int // bytes delivered (and read) so far
	spaceSeq    int // copied at the start of the measurement
	spaceAt     time.Duration
	rtt         time.Duration // the receiver's RTT estimate; 0 until sampled
}

// grew updates the receiver's window for a data segment of n bytes that
// arrived at now, rtt after the ACK it answers left (the sample the
// receiver's timestamps would give), with advmss the largest payload
// seen. It reports whether rcv_ssthresh grew: Linux then ACKs at once.
func (w *window) grew(n, advmss int, rtt, now time.Duration) bool {
	if !w.started {
		// tcp_select_initial_window and tcp_init_buffer_space.
		w.started = true
		w.rcvbuf = rmemDefault
		w.clamp = winFromSpace(w.rcvbuf)
		w.rcvSsthresh = min(w.clamp/advmss*advmss, w.clamp)
		w.space = min(w.rcvSsthresh, initCwnd*advmss)
		w.spaceAt = now
	}
	w.copied += n
	w.sampleRTT(rtt)
	w.adjustSpace(advmss, now)
	if n < 128 {
		return false
	}
	room := w.clamp - w.rcvSsthresh
	if room <= 0 {
		return false
	}
	w.rcvSsthresh += min(room, max(2*advmss, 2*n))
	return true
}

// sampleRTT is tcp_rcv_rtt_update: a lower sample replaces the estimate,
// a higher one moves it by an eighth.
func (w *window) sampleRTT(s time.Duration) {
	if s <= 0 {
		return
	}
	if w.rtt == 0 || s < w.rtt {
		w.rtt = s
		return
	}
	w.rtt += (s - w.rtt) / 8
}

// adjustSpace is tcp_rcv_space_adjust, run as the application reads: once
// per receiver RTT, if more was read than in the last one, the buffer
// grows to hold twice that, plus room for the growth, and the clamp
// follows.
func (w *window) adjustSpace(advmss int, now time.Duration) {
	if w.rtt == 0 {
		w.spaceSeq, w.spaceAt = w.copied, now
		return
	}
	if now-w.spaceAt < w.rtt {
		return
	}
	copied := w.copied - w.spaceSeq
	if copied > w.space {
		rcvwin := 2*copied + 16*advmss
		grow := rcvwin * (copied - w.space) / w.space
		rcvwin += 2 * grow
		if rcvbuf := min(spaceFromWin(rcvwin), rmemMax); rcvbuf > w.rcvbuf {
			w.rcvbuf = rcvbuf
			w.clamp = winFromSpace(rcvbuf)
		}
		w.space = copied
	}
	w.spaceSeq, w.spaceAt = w.copied, now
}
