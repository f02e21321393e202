package explain

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"github.com/netemu/netemu/tcpstack"
)

// What BBR's state says of a transfer.
//
// A BBR sender holds itself back in two ways the link cannot tell from a
// slow application: PROBE_RTT, where it keeps at most four packets in
// flight for at least 200 ms and a round trip (every 10 s the min RTT
// was not renewed), and long-term mode, where it takes the rate it
// measured over a stretch of losses for a policer's and sends at it for
// 48 round trips. The samples of a TCP that reports BBR's state
// (tcpstack.Sample's BBR: netemu's TCP, and kernel TCP, which reports
// no long-term flag) say when each began and ended; the Analyzer keeps
// each such span of each sending end.
//
// What a span cost is priced against the bandwidth estimate BBR had in
// the sample before it began: what the sender delivered during the span
// would have taken delivered ÷ that estimate; the rest of the span's
// length is its cost, none if it delivered more. It supposes the sender
// had data to send throughout (one with little to send lost less), and,
// for long-term mode, that the estimate before it was the path's: under
// a real policer the policer, not BBR, set the rate, and the cost is
// what the policer took. The cost is told beside the breakdown, not
// taken out of its categories, which come from the link alone.

// BBRPhase is a state of a BBR sender that explain reports.
type BBRPhase uint8

// BBR phases.
const (
	ProbeRTT BBRPhase = iota // BBR's PROBE_RTT mode
	LongTerm                 // BBR's long-term (policed) bandwidth in use
	numBBRPhases
)

func (p BBRPhase) String() string { return [...]string{"PROBE_RTT", "long-term mode"}[p] }

// BBRSpan is a stretch of time a BBR sender spent in a phase.
type BBRSpan struct {
	Local, Remote netip.AddrPort // the sending end
	Phase         BBRPhase
	From, To      time.Duration // link time, of the first sample in the phase and the first after it
	// Ongoing reports that the phase had not ended at the end's last
	// sample, which To is then.
	Ongoing bool
	// Delivered is what the sender delivered from From to To, bytes
	// (tcpi_delivered's packets at its MSS).
	Delivered int
	// Bandwidth is BBR's bandwidth estimate in the sample before the
	// span began, bytes per second; 0 if there was none.
	Bandwidth uint64
}

// Len is the span's length.
func (s BBRSpan) Len() time.Duration { return s.To - s.From }

// Needed is the time what the span delivered takes at Bandwidth; 0
// when BBR had no estimate.
func (s BBRSpan) Needed() time.Duration {
	if s.Bandwidth == 0 {
		return 0
	}
	return time.Duration(float64(s.Delivered) / float64(s.Bandwidth) * float64(time.Second))
}

// Cost is what the span cost: its length less Needed, between zero and
// its length; zero when BBR had no estimate.
func (s BBRSpan) Cost() time.Duration {
	if s.Bandwidth == 0 {
		return 0
	}
	return min(max(s.Len()-s.Needed(), 0), s.Len())
}

// BBRSpans are the spans of BBR's phases in a Breakdown.
type BBRSpans struct {
	// Spans are those that overlap the Breakdown's interval, clipped to
	// it, in time order: the first kept of them.
	Spans []BBRSpan
	// N, Time and Cost are per phase: how many spans, their length and
	// their cost in all, over every span that overlaps the interval.
	N    [numBBRPhases]int
	Time [numBBRPhases]time.Duration
	Cost [numBBRPhases]time.Duration
}

// bbrTrack is what the Analyzer follows of a connection end's BBR state.
type bbrTrack struct {
	open [numBBRPhases]*BBRSpan // the spans under way
	at   [numBBRPhases]int      // tcpi_delivered when each began, packets
}

// bbr follows a sample of end e (whose previous sample is prev) into and
// out of BBR's phases. a.mu is held and a.started.
func (a *Analyzer) bbr(e *end, prev, s *tcpstack.Sample) {
	if prev.Delivered > s.Delivered || prev.BBR.Mode != "" && s.BBR.Mode == "" {
		a.closeBBR(e, prev, false) // a new connection on the same addresses, or no more BBR
	}
	if s.BBR.Mode == "" {
		return
	}
	in := [numBBRPhases]bool{ProbeRTT: s.BBR.Mode == tcpstack.BBRProbeRTT, LongTerm: s.BBR.LongTerm}
	at := s.At.Sub(a.start)
	for p := range numBBRPhases {
		sp := e.bbr.open[p]
		switch {
		case in[p] && sp == nil:
			bw := prev.BBR.Bandwidth
			if prev.BBR.Mode == "" {
				bw = s.BBR.Bandwidth
			}
			e.bbr.open[p] = &BBRSpan{Local: s.Local, Remote: s.Remote, Phase: p, From: at, Bandwidth: bw}
			e.bbr.at[p] = s.Delivered
		case !in[p] && sp != nil:
			a.endSpan(e, p, s, at, false)
		}
	}
}

// closeBBR ends e's open spans at its sample s. a.mu is held.
func (a *Analyzer) closeBBR(e *end, s *tcpstack.Sample, ongoing bool) {
	for p := range numBBRPhases {
		if e.bbr.open[p] != nil {
			a.endSpan(e, p, s, s.At.Sub(a.start), ongoing)
		}
	}
}

// endSpan ends e's open span of phase p at link time at, with sample s
// (or keeps it, ongoing, for a Breakdown). a.mu is held.
func (a *Analyzer) endSpan(e *end, p BBRPhase, s *tcpstack.Sample, at time.Duration, ongoing bool) {
	sp := *e.bbr.open[p]
	sp.To, sp.Ongoing = at, ongoing
	sp.Delivered = max(s.Delivered-e.bbr.at[p], 0) * s.MSS
	if !ongoing {
		e.bbr.open[p] = nil
		a.bbrSpans = appendKept(a.bbrSpans, sp)
	} else {
		a.bbrOpen = append(a.bbrOpen, sp)
	}
}

// appendKept appends sp to spans while they are fewer than kept.
func appendKept(spans []BBRSpan, sp BBRSpan) []BBRSpan {
	if len(spans) < kept {
		return append(spans, sp)
	}
	return spans
}

// bbrSummary fills b's BBR spans: those ended and those under way at
// each end's last sample, clipped to b's interval. a.mu is held.
func (a *Analyzer) bbrSummary(b *Breakdown) {
	a.bbrOpen = a.bbrOpen[:0]
	if a.started {
		for _, e := range a.ends {
			a.closeBBR(e, &e.last, true)
		}
	}
	var spans []BBRSpan
	for _, sp := range slices.Concat(a.bbrSpans, a.bbrOpen) {
		if sp.To < b.From || sp.From > b.To {
			continue
		}
		if from, to := max(sp.From, b.From), min(sp.To, b.To); from != sp.From || to != sp.To {
			// What it delivered in the interval, as if evenly.
			sp.Delivered = int(float64(sp.Delivered) * float64(to-from) / float64(sp.Len()))
			sp.From, sp.To = from, to
		}
		spans = append(spans, sp)
	}
	slices.SortFunc(spans, func(x, y BBRSpan) int {
		return cmp.Or(cmp.Compare(x.From, y.From), x.Local.Compare(y.Local), cmp.Compare(x.Phase, y.Phase))
	})
	for _, sp := range spans {
		b.BBR.N[sp.Phase]++
		b.BBR.Time[sp.Phase] += sp.Len()
		b.BBR.Cost[sp.Phase] += sp.Cost()
	}
	b.BBR.Spans = spans[:min(len(spans), kept)]
}
