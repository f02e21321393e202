package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/netemu/netemu/emu/explain"
	"github.com/netemu/netemu/link"
)

// explainRecord is the breakdown in JSON.
type explainRecord struct {
	Ms          map[string]float64 `json:"ms"`
	DelayedACKs int                `json:"delayed_acks"` // ACKs held for some time (acks_held also counts those replaced at once)
	DelayedMs   float64            `json:"delayed_ms"`
	Waited      int                `json:"segments_waited"`
	Retransmits int                `json:"retransmits"`
	Drops       int                `json:"drops"`
}

// maxListed is how many held ACKs and waiting segments explain names.
const maxListed = 6

func cmdExplain(ctx context.Context, args []string, w, stderr io.Writer) error {
	o, cases, err := parseCases("explain", args, false)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	bar := newProgress(stderr, len(cases), o.clock == "real" || o.backend == kernelBE)
	defer bar.close()
	for i, c := range cases {
		bar.start(caseLabel(c))
		r, rec, in, err := o.measure(ctx, c, o.backend, o.caseVariant(c, len(cases) > 1), true)
		bar.finish()
		if err != nil {
			return err
		}
		from := in.rec.Since(r.Started)
		b := explain.Analyze(in.rec.Records(), from, from+r.Elapsed)
		held, heldFor := delayed(b)
		if o.json {
			er := explainRecord{Ms: map[string]float64{}, DelayedACKs: len(held), DelayedMs: msf(heldFor), Waited: len(b.Waiting), Retransmits: b.Retransmits, Drops: b.Drops}
			for _, cat := range explain.Categories() {
				er.Ms[cat.String()] = msf(b.Time[cat])
			}
			rec.Explain = &er
			if err := enc.Encode(rec); err != nil {
				return err
			}
			continue
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := r.Workload
		if v := variant(r); v != "" {
			title += " (" + v + ")"
		}
		fmt.Fprintf(w, "%s, rtt %s, rate %s, %s: %s\n", title, fmtDur(2*c.Link.Delay), link.FormatRate(c.Link.Rate), rec.Backend, fmtDur(r.Elapsed))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  where the time went\ttime\tshare\t")
		for _, cat := range explain.Categories() {
			fmt.Fprintf(tw, "  %s\t%s\t%.1f%%\t\n", cat, fmtDur(b.Time[cat]), 100*b.Share(cat))
		}
		tw.Flush()
		fmt.Fprintf(w, "  %d packets, %d retransmits, %d drops; %d ACKs delayed (%s in all); %d segments waited for an ACK; queueing delay %s in all, peak queue %d packets\n",
			b.Packets, b.Retransmits, b.Drops, len(held), fmtDur(heldFor), len(b.Waiting), fmtDur(b.QueueDelay), b.MaxQueue)
		if len(held) > 0 {
			fmt.Fprintf(w, "  delayed ACKs (%s):\n", listed(len(held)))
			for _, h := range held[:min(len(held), maxListed)] {
				how := "released by the delayed-ACK timer"
				if !h.Released {
					how = "replaced by a newer ACK"
				}
				fmt.Fprintf(w, "    at %9s  ACK from %s held %s, %s\n", fmtDur(h.At), h.From, fmtDur(h.Held), how)
			}
		}
		if len(b.Waiting) > 0 {
			fmt.Fprintf(w, "  segments that left only when an ACK arrived, held by Nagle's algorithm or the window (%s):\n", listed(len(b.Waiting)))
			for _, s := range b.Waiting[:min(len(b.Waiting), maxListed)] {
				fmt.Fprintf(w, "    at %9s  %d bytes from %s, %s after the flow's previous segment\n", fmtDur(s.At), s.Len, s.From, fmtDur(s.Waited))
			}
		}
	}
	return nil
}

func listed(n int) string {
	if n <= maxListed {
		return fmt.Sprintf("%d", n)
	}
	return fmt.Sprintf("first %d of %d", maxListed, n)
}

// delayed returns the holds that lasted (an ACK held and replaced in the
// same instant delayed nothing) and their total time.
func delayed(b explain.Breakdown) (held []explain.Hold, total time.Duration) {
	for _, h := range b.Holds {
		if h.Held > 0 {
			held = append(held, h)
			total += h.Held
		}
	}
	return held, total
}
