package tcp

import "time"

// Linux's timer constants (include/net/tcp.h), in time rather than
// jiffies; jiffies are applied where Linux rounds to them (ticks).
const (
	rtoMin      = 200 * time.Millisecond // TCP_RTO_MIN
	rtoMax      = 120 * time.Second      // TCP_RTO_MAX
	timeoutInit = time.Second            // TCP_TIMEOUT_INIT: SYN and first RTO
	timeoutMin  = 2 * time.Millisecond   // TCP_TIMEOUT_MIN_US
	minRTTWin   = 300 * time.Second      // net.ipv4.tcp_min_rtt_wlen
)

// ticks rounds d up to whole jiffies at hz, as usecs_to_jiffies does.
func ticks(d time.Duration, hz int) time.Duration {
	j := time.Second / time.Duration(hz)
	return (d + j - 1) / j * j
}

// jiffy is one tick at hz.
func jiffy(hz int) time.Duration { return time.Second / time.Duration(hz) }

// rttEstimator is Linux's smoothed RTT (tcp_rtt_estimator): srtt with
// gain 1/8 and the mean deviation with gain 1/4 (a sample below srtt
// moves it by a further 1/8), in microseconds as Linux keeps them.
// rttvar is the largest deviation of the last window of data, never
// under TCP_RTO_MIN, decaying by a quarter of its excess once per window.
// The RTO is srtt + rttvar in whole jiffies (tcp_set_rto,
// __tcp_set_rto), at most TCP_RTO_MAX (tcp_bound_rto).
type rttEstimator struct {
	srtt    time.Duration
	mdev    time.Duration // four times the mean deviation (Linux's mdev_us)
	mdevMax time.Duration // the largest mdev of this window (mdev_max_us)
	rttvar  time.Duration // rttvar_us, same scale as mdev
	rttSeq  uint32        // snd_nxt when rttvar was last decayed
	rto     time.Duration
}

// sample folds in one RTT measurement m. una and nxt are snd_una and
// snd_nxt: rttvar decays once per window of data.
func (r *rttEstimator) sample(m time.Duration, una, nxt uint32, hz int) {
	m = max(m.Truncate(time.Microsecond), time.Microsecond)
	if r.srtt == 0 {
		// The first sample: srtt = m and rto = 3m, floored (RFC 6298 2.2
		// as Linux applies it).
		r.srtt = m
		r.mdev = 2 * m
		r.rttvar = max(r.mdev, rtoMin)
		r.mdevMax = r.rttvar
		r.rttSeq = nxt
	} else {
		err := m - r.srtt
		r.srtt += err / 8
		if err < 0 {
			err = -err - r.mdev/4
			if err > 0 {
				err /= 8
			}
		} else {
			err -= r.mdev / 4
		}
		r.mdev += err
		if r.mdev > r.mdevMax {
			r.mdevMax = r.mdev
			r.rttvar = max(r.rttvar, r.mdevMax)
		}
		if int32(una-r.rttSeq) > 0 {
			if r.mdevMax < r.rttvar {
				r.rttvar -= (r.rttvar - r.mdevMax) / 4
			}
			r.rttSeq = nxt
			r.mdevMax = rtoMin
		}
	}
	r.srtt = max(r.srtt, time.Microsecond)
	r.rto = min(ticks(r.srtt+r.rttvar, hz), rtoMax)
}

// minRTT is Linux's windowed minimum of RTT samples (tcp_update_rtt_min
// over win_minmax): the least sample of the last minRTTWin, kept as the
// best three samples of the window's thirds (lib/win_minmax.c's scheme).
type minRTT struct {
	s [3]struct {
		t time.Duration // when taken
		v time.Duration
	}
}

func (m *minRTT) get() time.Duration { return m.s[0].v }

func (m *minRTT) update(now, v time.Duration) {
	if m.s[0].v == 0 || v <= m.s[0].v || now-m.s[2].t > minRTTWin {
		for i := range m.s {
			m.s[i].t, m.s[i].v = now, v
		}
		return
	}
	if v <= m.s[1].v {
		m.s[1].t, m.s[1].v = now, v
		m.s[2] = m.s[1]
	} else if v <= m.s[2].v {
		m.s[2].t, m.s[2].v = now, v
	}
	// Age the estimates: a best sample older than the window gives way
	// to the next; past a quarter or half of it, the later thirds are
	// refreshed (minmax_subwin_update).
	dt := now - m.s[0].t
	switch {
	case dt > minRTTWin:
		m.s[0], m.s[1] = m.s[1], m.s[2]
		m.s[2].t, m.s[2].v = now, v
		if now-m.s[0].t > minRTTWin {
			m.s[0], m.s[1] = m.s[1], m.s[2]
		}
	case m.s[1].t == m.s[0].t && dt > minRTTWin/4:
		m.s[1].t, m.s[1].v = now, v
		m.s[2] = m.s[1]
	case m.s[2].t == m.s[1].t && dt > minRTTWin/2:
		m.s[2].t, m.s[2].v = now, v
	}
}
