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
//
// A wheel timer is one Linux keeps on its timer wheel (a timer_list:
// the retransmission, delayed-ACK, keepalive and TIME-WAIT timers); it
// fires on a jiffy tick, as wheelExpiry says. Others are hrtimers (the
// SACK-compression and pacing timers) and fire at their instant.
type etimer struct {
	e     *endpoint
	t     clock.Timer
	due   time.Duration // the connection's time at which it is due
	armed bool
	wheel bool
	fire  func(*endpoint)
}

// set arms the timer d from now; a wheel timer for ⌈d⌉ jiffies from
// the current jiffy (jiffies + when, as sk_reset_timer's callers
// write it).
func (t *etimer) set(d time.Duration) {
	d = max(d, 0)
	now := t.e.now()
	if !t.wheel {
		t.arm(now, now+d)
		return
	}
	hz := t.e.p.opts.HZ
	t.setJiffies(now, jiffies64(now, hz)+uint64(ticks(d, hz)/jiffy(hz)), hz)
}

// setJiffies arms a wheel timer, at the connection's time now, for the
// absolute jiffy expires (mod_timer(timer, expires)).
func (t *etimer) setJiffies(now time.Duration, expires uint64, hz int) {
	t.arm(now, jiffyInstant(wheelExpiry(expires, jiffies64(now, hz), hz), hz))
}

// arm makes the timer, at the connection's time now, due at at.
func (t *etimer) arm(now, at time.Duration) {
	d := max(at-now, 0)
	t.armed = true
	t.due = at
	if t.t == nil {
		// Quiet (clock.QuietTimers): a timer's work is inline, and it
		// readies a waiting goroutine only through the waiter queue,
		// whose entries go through the clock's Wake.
		t.t = clock.AfterFuncQuiet(t.e.p.clk, d, t.run)
		return
	}
	t.t.Reset(d)
}

// Linux's timer wheel (kernel/time/timer.c): level n holds timers whose
// expiry is fewer than wheelLevelStart(n+1) jiffies away, in buckets of
// 8ⁿ jiffies (LVL_CLK_SHIFT 3, LVL_BITS 6); LVL_DEPTH is 9 levels above
// HZ 100, 8 at or below.
const (
	wheelClkShift = 3
	wheelBits     = 6
)

// wheelLevelStart is LVL_START(n): the first delta kept on level n.
func wheelLevelStart(n uint) uint64 {
	return (1<<wheelBits - 1) << ((n - 1) * wheelClkShift)
}

// wheelExpiry is the jiffy on whose tick a timer armed for jiffy expires,
// when the wheel's clock is at jiffy clk, runs (calc_wheel_index,
// calc_index): the level is chosen by expires − clk, and the expiry is
// rounded up to the next multiple of that level's granularity, strictly
// after expires — so a timer never fires early and fires up to one
// jiffy late on level 0 (a 10-jiffy delayed ACK at HZ 250 runs 40 to
// 44 ms after it was armed), up to 8 jiffies on level 1 (a 1 s RTO
// runs within 32 ms after its second), 64 on level 2. Beyond the last
// level, the expiry is cut to clk + WHEEL_TIMEOUT_MAX. A timer already
// due runs on the next tick. The wheel's clock is taken as the current
// jiffy (forward_timer_base on an idle base).
func wheelExpiry(expires, clk uint64, hz int) uint64 {
	if int64(expires-clk) < 0 {
		return clk + 1
	}
	depth := uint(9)
	if hz <= 100 {
		depth = 8
	}
	delta := expires - clk
	lvl := uint(0)
	for lvl < depth-1 && delta >= wheelLevelStart(lvl+1) {
		lvl++
	}
	if cutoff := wheelLevelStart(depth); delta >= cutoff {
		expires = clk + cutoff - 1<<((depth-1)*wheelClkShift)
	}
	shift := lvl * wheelClkShift
	return (expires>>shift + 1) << shift
}

// jiffies64 is the kernel's jiffies at the connection's time d: ticks
// of 1/hz s rounded down, counted from INITIAL_JIFFIES (−300·HZ as 32
// bits, include/linux/jiffies.h) as a 64-bit kernel keeps it.
func jiffies64(d time.Duration, hz int) uint64 {
	h := int64(hz)
	n := int64(d)
	j := (n/int64(time.Second))*h + (n%int64(time.Second))*h/int64(time.Second)
	return uint64(uint32(-300*h)) + uint64(j)
}

// jiffyInstant is the first instant at which jiffies64 reads j.
func jiffyInstant(j uint64, hz int) time.Duration {
	k := int64(j - uint64(uint32(-300*int64(hz))))
	h := int64(hz)
	return time.Duration((k/h)*int64(time.Second) + ((k%h)*int64(time.Second)+h-1)/h)
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
	e.stampNow()
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
	pace     etimer // the pacing timer (pacing_timer), armed only while pacing holds a segment
}

func (tm *timers) init(e *endpoint) {
	tm.xmit = etimer{e: e, wheel: true, fire: (*endpoint).onXmitTimer}
	tm.delack = etimer{e: e, wheel: true, fire: (*endpoint).onDelackTimer}
	tm.comp = etimer{e: e, fire: (*endpoint).onCompTimer}
	tm.life = etimer{e: e, wheel: true, fire: (*endpoint).onLifeTimer}
	tm.pace = etimer{e: e, fire: (*endpoint).onPaceTimer}
}

func (tm *timers) stopAll() {
	tm.xmit.stop()
	tm.delack.stop()
	tm.comp.stop()
	tm.life.stop()
	tm.pace.stop()
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

func (e *endpoint) onCompTimer() { e.rcv.compSendAck() }

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
	e.tm.pace.stop()
	e.tm.life.set(timeWaitLen)
	e.snd.free()
	e.notify |= waiter.EventHUp | waiter.ReadableEvents | waiter.WritableEvents
}
