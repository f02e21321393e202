package tcp

import (
	"time"

	"github.com/netemu/netemu/clock"
	"gvisor.dev/gvisor/pkg/waiter"
)

// etimer is one timer of a connection on the run's clock. Its callback
// takes the connection's lock and does nothing if the timer was stopped
// or moved later meanwhile (on the real clock a stopped timer may still
// run), so only a live, due timer acts.
type etimer struct {
	e     *endpoint
	t     clock.Timer
	due   time.Duration // the connection's time at which it is due
	armed bool
	fire  func(*endpoint)
}

func (t *etimer) set(d time.Duration) {
	d = max(d, 0)
	t.armed = true
	t.due = t.e.now() + d
	if t.t == nil {
		t.t = t.e.p.clk.AfterFunc(d, t.run)
		return
	}
	t.t.Reset(d)
}

func (t *etimer) stop() {
	if !t.armed {
		return
	}
	t.armed = false
	if t.t != nil {
		t.t.Stop()
	}
}

func (t *etimer) run() {
	e := t.e
	e.mu.Lock()
	if t.armed && e.now() >= t.due {
		t.armed = false
		t.fire(e)
	}
	e.unlock()
}

// xmitKind is what the retransmission timer is armed for: Linux keeps
// the RTO, the RACK reordering timer, the tail-loss probe and the
// zero-window probe on one timer (icsk_pending).
type xmitKind uint8

const (
	xmitRTO xmitKind = iota
	xmitReo
	xmitTLP
	xmitProbe
)

// timers are a connection's timers.
type timers struct {
	xmit     etimer
	xmitKind xmitKind
	delack   etimer // the delayed ACK (icsk_delack_timer)
	comp     etimer // the SACK-compression timer (compressed_ack_timer)
	life     etimer // keepalive, FIN-WAIT-2 and TIME-WAIT
}

func (tm *timers) init(e *endpoint) {
	tm.xmit = etimer{e: e, fire: (*endpoint).onXmitTimer}
	tm.delack = etimer{e: e, fire: (*endpoint).onDelackTimer}
	tm.comp = etimer{e: e, fire: (*endpoint).onCompTimer}
	tm.life = etimer{e: e, fire: (*endpoint).onLifeTimer}
}

func (tm *timers) stopAll() {
	tm.xmit.stop()
	tm.delack.stop()
	tm.comp.stop()
	tm.life.stop()
}

// setXmit arms the retransmission timer for kind, d from now
// (inet_csk_reset_xmit_timer), at most TCP_RTO_MAX.
func (tm *timers) setXmit(kind xmitKind, d time.Duration) {
	tm.xmitKind = kind
	tm.xmit.set(min(d, rtoMax))
}

// resetKeepalive rearms the keepalive timer of an established
// connection with SO_KEEPALIVE (inet_csk_reset_keepalive_timer).
func (tm *timers) resetKeepalive() {
	e := tm.xmit.e
	if e.state != stateEstablished && e.state != stateCloseWait {
		return
	}
	if !e.ops.GetKeepAlive() {
		tm.life.stop()
		return
	}
	e.kaSent = 0
	tm.life.set(e.kaIdle)
}

func (e *endpoint) onXmitTimer() {
	switch e.tm.xmitKind {
	case xmitRTO:
		e.snd.retransmitTimer()
	case xmitReo:
		e.snd.reoTimeout()
	case xmitTLP:
		e.snd.sendLossProbe()
	case xmitProbe:
		e.snd.probeTimer()
	}
}

// onDelackTimer sends the pending ACK, and hands the state to the probe
// when it did: each ACK the timer sends reaches the probe with its count
// (Info.DelayedACKs), so that what watches the probe sees every hold.
func (e *endpoint) onDelackTimer() {
	if e.rcv.delackTimer() {
		e.probe()
	}
}

func (e *endpoint) onCompTimer() { e.rcv.compTimer() }

// onLifeTimer ends a TIME-WAIT or an orphaned FIN-WAIT-2, or sends a
// keepalive probe (a SYN-RECV request that never completes is dropped by
// its retransmission timer)
// (tcp_keepalive_timer, tcp_time_wait).
func (e *endpoint) onLifeTimer() {
	switch e.state {
	case stateTimeWait, stateFinWait2:
		e.done(nil)
	case stateEstablished, stateCloseWait:
		e.keepaliveTimer()
	}
}

// keepaliveTimer probes an idle connection: after kaIdle of silence, a
// probe every kaIntvl, and after kaProbes unanswered ones the connection
// ends with ETIMEDOUT (tcp_keepalive_timer).
func (e *endpoint) keepaliveTimer() {
	if !e.ops.GetKeepAlive() {
		return
	}
	idle := e.now() - e.rcv.lrcvtime
	if e.snd.packetsOut > 0 || e.snd.unsent() > 0 {
		e.tm.life.set(e.kaIdle)
		return
	}
	if idle < e.kaIdle && e.kaSent == 0 {
		e.tm.life.set(e.kaIdle - idle)
		return
	}
	if e.kaSent >= e.kaProbes {
		e.sendReset()
		e.done(errTimeout)
		return
	}
	// A probe is a segment one below snd_una: the peer answers with an
	// ACK (tcp_write_wakeup → tcp_xmit_probe_skb).
	e.snd.sendProbeSegment()
	e.kaSent++
	e.tm.life.set(e.kaIntvl)
}

// timeWaitLen is TCP_TIMEWAIT_LEN, also the orphaned FIN-WAIT-2 time
// (tcp_fin_timeout).
const timeWaitLen = 60 * time.Second

// enterTimeWait moves to TIME-WAIT (tcp_time_wait): the connection
// keeps its port and answers retransmitted FINs for timeWaitLen.
func (e *endpoint) enterTimeWait() {
	e.state = stateTimeWait
	e.tm.xmit.stop()
	e.tm.delack.stop()
	e.tm.comp.stop()
	e.tm.life.set(timeWaitLen)
	e.snd.free()
	e.notify |= waiter.EventHUp | waiter.ReadableEvents | waiter.WritableEvents
}
