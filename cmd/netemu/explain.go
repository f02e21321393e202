package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/explain"
)

// maxListed is how many held ACKs and waiting segments explain names.
const maxListed = 6

func cmdExplain(ctx context.Context, args []string, w, stderr io.Writer) error {
	o, cases, err := parseCases("explain", args, false)
	if err != nil {
		return err
	}
	o.printNotes(stderr)
	defer o.announce(stderr)
	b, err := o.newBackend(o.backend)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	bar := newProgress(stderr, len(cases), o.clock == "real" || b.Name() != (experiment.Emulated{}).Name())
	defer bar.close()
	for i, c := range cases {
		bar.start(caseLabel(c))
		vname := o.caseVariant(c, len(cases) > 1)
		r, rec, watch, err := o.measure(ctx, b, c, vname, true)
		bar.finish()
		if err != nil {
			return err
		}
		if err := o.drawFigures(c, r, watch, vname); err != nil {
			return err
		}
		from := watch.Analyzer().Since(r.Started)
		bd := watch.Analyzer().Breakdown(from, from+r.Elapsed)
		if o.json {
			ex := experiment.Explanation{Ms: map[string]float64{}, DelayedACKs: bd.HeldACKs, DelayedMs: experiment.Ms(bd.HeldTime), Waited: bd.Waited, Retransmits: bd.Retransmits, Drops: bd.Drops}
			for _, cat := range explain.Categories() {
				ex.Ms[cat.String()] = experiment.Ms(bd.Time[cat])
			}
			rec.Explain = &ex
			if err := enc.Encode(rec); err != nil {
				return err
			}
			continue
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s, rtt %s, rate %s, %s: %s\n", experiment.Title(c.Workload), fmtDur(c.RTT()), c.RateLabel(), rec.Backend, fmtDur(r.Elapsed))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  where the time went\ttime\tshare\t")
		for _, cat := range explain.Categories() {
			fmt.Fprintf(tw, "  %s\t%s\t%.1f%%\t\n", cat, fmtDur(bd.Time[cat]), 100*bd.Share(cat))
		}
		tw.Flush()
		fmt.Fprintf(w, "  %d packets, %d retransmits, %d drops; %d ACKs delayed (%s in all); %d segments waited for an ACK; queueing delay %s in all, peak queue %d packets\n",
			bd.Packets, bd.Retransmits, bd.Drops, bd.HeldACKs, fmtDur(bd.HeldTime), bd.Waited, fmtDur(bd.QueueDelay), bd.MaxQueue)
		if line := impairmentLine(rec); line != "" {
			fmt.Fprintf(w, "  %s\n", line)
		}
		if bd.Inexact {
			fmt.Fprintf(w, "  (the counts include some ACK holds or waiting segments after the run's end)\n")
		}
		if bd.HeldACKs > 0 {
			fmt.Fprintf(w, "  delayed ACKs (%s):\n", listed(bd.HeldACKs))
			for _, h := range bd.Holds[:min(len(bd.Holds), maxListed)] {
				how := "released by the delayed-ACK timer"
				if !h.Released {
					how = "replaced by a newer ACK"
				}
				fmt.Fprintf(w, "    at %9s  ACK from %s held %s, %s\n", fmtDur(h.At), h.From, fmtDur(h.Held), how)
			}
		}
		if bd.Waited > 0 {
			fmt.Fprintf(w, "  segments that left only when an ACK arrived, held by Nagle's algorithm or the window (%s):\n", listed(bd.Waited))
			for _, s := range bd.Waiting[:min(len(bd.Waiting), maxListed)] {
				fmt.Fprintf(w, "    at %9s  %d bytes from %s, %s after the flow's previous segment\n", fmtDur(s.At), s.Len, s.From, fmtDur(s.Waited))
			}
		}
	}
	return nil
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
