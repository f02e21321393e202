package experiment

import (
	"github.com/netemu/netemu/report/explain"
)

// NewExplanation is explain's breakdown of a run as its record's part.
func NewExplanation(bd explain.Breakdown) *Explanation {
	ex := &Explanation{Ms: map[string]float64{}, DelayedACKs: bd.HeldACKs, DelayedMs: Ms(bd.HeldTime), Waited: bd.Waited, Retransmits: bd.Retransmits, Drops: bd.Drops}
	for _, cat := range explain.Categories() {
		ex.Ms[cat.String()] = Ms(bd.Time[cat])
	}
	l := bd.Loss
	for _, cat := range explain.LossRecovery() {
		if n := l.Repaired[cat]; n > 0 {
			if ex.Repaired == nil {
				ex.Repaired = map[string]int{}
			}
			ex.Repaired[cat.String()] = n
		}
	}
	ex.Probes, ex.Timeouts, ex.Unsure, ex.Unneeded, ex.Recoveries = l.Probes, l.Timeouts, l.Unsure, l.Unneeded, l.Episodes
	switch bd.HeldBy {
	case explain.ByTCP:
		ex.DelayedBy = "tcp"
	case explain.ByLink | explain.ByTCP:
		ex.DelayedBy = "link+tcp"
	default:
		ex.DelayedBy = "link"
	}
	if a := bd.ACKs; a.Counted {
		ex.ACKs = &ACKCounts{DelayedACKs: a.DelayedACKs, DelayedACKLost: a.DelayedACKLost, QuickACKs: a.QuickACKs, DelayedMs: Ms(a.DelayedACKTime)}
	}
	for _, s := range bd.TCP {
		st := TCPState{
			Conn: s.Local.String() + "→" + s.Remote.String(), AtMs: Ms(s.At),
			Cwnd: s.Cwnd, SRTTms: Ms(s.SRTT), RTTVarMs: Ms(s.RTTVar), RTOms: Ms(s.RTO),
			Unacked: s.Unacked, Sacked: s.Sacked, Lost: s.Lost, Retrans: s.Retrans, TotalRetrans: s.TotalRetrans,
			Delivered: s.Delivered, CAState: s.CAState, RcvWnd: s.RcvWnd, RcvSsthresh: s.RcvSsthresh,
		}
		if s.Ssthresh > 0 {
			st.Ssthresh = ptr(s.Ssthresh)
		}
		ex.TCP = append(ex.TCP, st)
	}
	for _, s := range bd.BBR.Spans {
		ex.BBR = append(ex.BBR, BBRSpan{Conn: s.Local.String() + "→" + s.Remote.String(), Phase: s.Phase.String(),
			FromMs: Ms(s.From), ToMs: Ms(s.To), Ongoing: s.Ongoing, CostMs: Ms(s.Cost())})
	}
	return ex
}
