package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/explain"
	"github.com/netemu/netemu/workloads"
)

// explain's text: where a case's time went, and what explains it.

// WriteExplanation writes where case c's time went, as netemu explain
// prints it: its headline, the share of each category, the counts, and
// the ACKs, segments and connections that explain them; r and rec are
// the run's result and record, bd the breakdown of its time.
func WriteExplanation(w io.Writer, c experiment.Case, r workloads.Result, rec experiment.Record, bd explain.Breakdown) {
	fmt.Fprintf(w, "%s, rtt %s, rate %s, %s: %s\n", experiment.Title(c.Workload), fmtDur(c.RTT()), c.RateLabel(), rec.Backend, fmtDur(r.Elapsed))
	writeShares(w, c, bd)
	fmt.Fprintf(w, "  %d packets, %d retransmits, %d drops; %s; %d segments waited for an ACK; queueing delay %s in all, peak queue %d packets\n",
		bd.Packets, bd.Retransmits, bd.Drops, heldLine(bd, tcpName(rec)), bd.Waited, fmtDur(bd.QueueDelay), bd.MaxQueue)
	if line := impairmentLine(rec); line != "" {
		fmt.Fprintf(w, "  %s\n", line)
	}
	for _, line := range lossLines(bd.Loss) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	if bd.Inexact {
		fmt.Fprintf(w, "  (the counts include some ACK holds or waiting segments after the run's end)\n")
	}
	writeBBR(w, bd.BBR)
	writeListed(w, bd, tcpName(rec))
}

// bbrLine says how long BBR senders spent in PROBE_RTT and in long-term
// mode, and what that cost by explain's rule (report/explain/bbr.go).
func bbrLine(b explain.BBRSpans) string {
	var parts []string
	for _, p := range []explain.BBRPhase{explain.ProbeRTT, explain.LongTerm} {
		if n := b.N[p]; n > 0 {
			parts = append(parts, fmt.Sprintf("in %s for %s (%s), costing about %s", p, fmtDur(b.Time[p]), plural(n, "span"), fmtDur(b.Cost[p])))
		}
	}
	return "BBR: " + strings.Join(parts, "; ") + " (a span's cost: its length less the time what it delivered takes at the bandwidth estimate before it)"
}

// writeBBR writes, where BBR senders spent time in PROBE_RTT or
// long-term mode, bbrLine and the first maxListed spans: when, for how
// long, what was delivered and what it cost.
func writeBBR(w io.Writer, b explain.BBRSpans) {
	n := b.N[explain.ProbeRTT] + b.N[explain.LongTerm]
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "  %s\n", bbrLine(b))
	fmt.Fprintf(w, "  BBR's PROBE_RTT and long-term mode (%s):\n", listed(n))
	for _, sp := range b.Spans[:min(len(b.Spans), maxListed)] {
		length := "for " + fmtDur(sp.Len())
		if sp.Ongoing {
			length += ", still at the end"
		}
		cost := "no estimate before it to price it by"
		if sp.Bandwidth > 0 {
			cost = fmt.Sprintf("which takes %s at the estimate of %s before it; cost about %s", fmtDur(sp.Needed()), fmtByteRate(sp.Bandwidth), fmtDur(sp.Cost()))
		}
		fmt.Fprintf(w, "    at %9s  %s→%s in %s %s: delivered %s, %s\n", fmtDur(sp.From), sp.Local, sp.Remote, sp.Phase, length, fmtBytes(sp.Delivered), cost)
	}
}

// fmtByteRate writes bytes per second as bits per second with an SI
// prefix: "9.98 Mbit/s".
func fmtByteRate(bytesPerSecond uint64) string {
	bps := float64(bytesPerSecond) * 8
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if bps >= u.scale {
			return fmt.Sprintf("%.2f %s", bps/u.scale, u.name)
		}
	}
	return fmt.Sprintf("%.0f bit/s", bps)
}

// fmtBytes writes a byte count with an SI prefix: "52.1 KB".
func fmtBytes(n int) string {
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}} {
		if float64(n) >= u.scale {
			return fmt.Sprintf("%.1f %s", float64(n)/u.scale, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// maxListed is how many held ACKs and waiting segments explain names.
const maxListed = 6

// writeShares writes the table of where case c's time went: each
// category's time and share of the run.
func writeShares(w io.Writer, c experiment.Case, bd explain.Breakdown) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  where the time went\ttime\tshare\t")
	for _, cat := range explain.Categories() {
		name := cat.String()
		if cat == explain.Serialization && (c.Link.Trace != nil || c.Link.BtoA != nil && c.Link.BtoA.Trace != nil) {
			// A trace's rate is its delivery opportunities.
			name = "waiting for the link's capacity (serialization on its trace)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%.1f%%\t\n", name, fmtDur(bd.Time[cat]), 100*bd.Share(cat))
	}
	tw.Flush()
}

// writeListed writes, each under its line, the first maxListed delayed
// ACKs and segments that waited for an ACK, the ACK counts, and the
// state of the first maxListed connection ends, as tcp (the TCP's name)
// reports it.
func writeListed(w io.Writer, bd explain.Breakdown, tcp string) {
	if bd.HeldACKs > 0 {
		fmt.Fprintf(w, "  delayed ACKs (%s):\n", listed(bd.HeldACKs))
		for _, h := range bd.Holds[:min(len(bd.Holds), maxListed)] {
			by := "released by the delayed-ACK timer"
			if h.By == explain.ByTCP {
				by = "sent by its own delayed-ACK timer"
			}
			fmt.Fprintf(w, "    at %9s  ACK from %s held %s, %s\n", fmtDur(h.At), h.From, fmtDur(h.Held), by)
		}
	}
	if bd.Waited > 0 {
		fmt.Fprintf(w, "  segments that left only when an ACK arrived, held by Nagle's algorithm or the window (%s):\n", listed(bd.Waited))
		for _, s := range bd.Waiting[:min(len(bd.Waiting), maxListed)] {
			fmt.Fprintf(w, "    at %9s  %d bytes from %s, %s after the flow's previous segment\n", fmtDur(s.At), s.Len, s.From, fmtDur(s.Waited))
		}
	}
	if a := bd.ACKs; a.Counted {
		fmt.Fprintf(w, "  %s\n", ackCountsLine(a, tcp))
	}
	if n := len(bd.TCP); n > 0 {
		fmt.Fprintf(w, "  %s at each connection end's last sample, with tcp_info's names (%s):\n", tcp, listed(n))
		for _, st := range bd.TCP[:min(n, maxListed)] {
			fmt.Fprintf(w, "    %s→%s at %s: %s\n", st.Local, st.Remote, fmtDur(st.At), stateLine(st))
		}
	}
}

// tcpName names the run's TCP.
func tcpName(rec experiment.Record) string {
	switch rec.TCP {
	case "netemu":
		return "netemu's TCP"
	case "gvisor":
		return "gVisor's TCP"
	case "linux":
		return "kernel TCP"
	}
	return "the TCP"
}

// ackCountsLine says what the receivers counted of their own ACKs.
func ackCountsLine(a explain.ACKCounts, tcp string) string {
	return fmt.Sprintf("%s's ACKs over the run: %d sent by the delayed-ACK timer (TcpExtDelayedACKs, held %s in all), %d sent at once in quick-ACK mode; %s came again (TcpExtDelayedACKLost)",
		tcp, a.DelayedACKs, fmtDur(a.DelayedACKTime), a.QuickACKs, plural(a.DelayedACKLost, "segment"))
}

// stateLine writes a connection end's TCP state as tcp_info names it.
func stateLine(st explain.TCPState) string {
	ssthresh := "infinite"
	if st.Ssthresh > 0 {
		ssthresh = fmt.Sprint(st.Ssthresh)
	}
	return fmt.Sprintf("cwnd %d, ssthresh %s, srtt %s, rttvar %s, rto %s, unacked %d, sacked %d, lost %d, retrans %d, total_retrans %d, delivered %d, ca_state %s, rcv_wnd %d, rcv_ssthresh %d",
		st.Cwnd, ssthresh, fmtDur(st.SRTT), fmtDur(st.RTTVar), fmtDur(st.RTO), st.Unacked, st.Sacked, st.Lost, st.Retrans, st.TotalRetrans, st.Delivered, st.CAState, st.RcvWnd, st.RcvSsthresh)
}

// lossLines say how the senders recovered from what the link lost, and
// what explain cannot separate.
func lossLines(l explain.Loss) []string {
	var lines []string
	if n := l.Lost(); n > 0 || l.Probes > 0 || l.Timeouts > 0 {
		line := "loss recovery: nothing lost"
		if n > 0 {
			line = fmt.Sprintf("loss recovery: %s sent again", plural(n, "lost segment"))
			for _, c := range []struct {
				cat  explain.Category
				what string
			}{{explain.FastRecovery, "by fast retransmit or RACK"}, {explain.TailLossProbe, "after a tail-loss probe"}, {explain.Timeout, "after a timeout"}} {
				if k := l.Repaired[c.cat]; k > 0 {
					line += fmt.Sprintf(", %d %s", k, c.what)
				}
			}
		}
		var fired []string
		if l.Probes > 0 {
			fired = append(fired, plural(l.Probes, "tail-loss probe"))
		}
		if l.Timeouts > 0 {
			fired = append(fired, plural(l.Timeouts, "retransmission timeout"))
		}
		if len(fired) > 0 {
			line += "; " + strings.Join(fired, " and ") + " fired"
		}
		lines = append(lines, line)
	}
	if l.Unsure > 0 {
		lines = append(lines, fmt.Sprintf("%s could as well have been a tail-loss probe (the link missed the handshake, or TCPs differ there): counted as timeouts", plural(l.Unsure, "timeout")))
	}
	if l.Unneeded > 0 {
		lines = append(lines, fmt.Sprintf("%s repaired nothing the link lost (spurious, or a loss inside a host)", plural(l.Unneeded, "retransmission")))
	}
	if l.Episodes > 0 {
		lines = append(lines, fmt.Sprintf("%s cut the congestion window; the rounds sent at the smaller window stay in request round trips (explain cannot separate what the cut cost)", plural(l.Episodes, "recovery", "recoveries")))
	}
	return lines
}

// heldLine counts the ACKs a delayed-ACK timer held, says whose timer
// where it is the TCP's own (tcp names it), and, when other things were
// under way meanwhile, how much of their time is the delayed-ACK line's.
func heldLine(bd explain.Breakdown, tcp string) string {
	line := fmt.Sprintf("%d ACKs delayed", bd.HeldACKs)
	if bd.HeldBy == explain.ByTCP {
		line += " by " + tcp
	}
	line += fmt.Sprintf(" (%s in all", fmtDur(bd.HeldTime))
	if t := bd.Time[explain.DelayedACK]; t != bd.HeldTime {
		line += fmt.Sprintf(", %s of it with nothing else under way", fmtDur(t))
	}
	if bd.HeldBy == explain.ByLink|explain.ByTCP {
		line += fmt.Sprintf("; %d by %s, %d by the link", bd.TCPHeldACKs, tcp, bd.HeldACKs-bd.TCPHeldACKs)
	}
	return line + ")"
}

// plural writes n and the noun, in the plural (the given one, or with
// an s) unless n is 1.
func plural(n int, noun string, plurals ...string) string {
	if n == 1 {
		return "1 " + noun
	}
	if len(plurals) > 0 {
		return fmt.Sprintf("%d %s", n, plurals[0])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// impairmentLine says what the link did to packets besides delaying them:
// drops by reason, duplicates, corrupted and reordered packets.
func impairmentLine(rec experiment.Record) string {
	var parts []string
	for r := range link.DropReason(0).Count() {
		if n := rec.DropsBy[r.String()]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d dropped (%s)", n, r))
		}
	}
	for _, c := range []struct {
		n    uint64
		what string
	}{{rec.Duplicated, "duplicated"}, {rec.Corrupted, "corrupted (then dropped by the receiver's checksum)"}, {rec.Reordered, "sent ahead of the delay (reordered)"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "the link: " + strings.Join(parts, "; ")
}

func listed(n int) string {
	if n <= maxListed {
		return fmt.Sprintf("%d", n)
	}
	return fmt.Sprintf("first %d of %d", maxListed, n)
}
