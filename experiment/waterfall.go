package experiment

import (
	"fmt"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/waterfall"
	"github.com/netemu/netemu/workloads"
	"github.com/netemu/netemu/workloads/web"
)

// WaterfallFigure is the waterfall of one run: a row per request, in the
// order they were issued, with the phases of its timing, and a line where
// the run ended. ok is false when the result has no timings (a workload
// that does not record them, or one run without them).
func WaterfallFigure(title string, r workloads.Result) (c waterfall.Chart, ok bool) {
	t, isTimed := r.Detail.(workloads.Timings)
	if !isTimed || len(t.Timings()) == 0 {
		return waterfall.Chart{}, false
	}
	c = waterfall.Chart{Title: title, End: r.Elapsed.Seconds(), EndLabel: "last byte " + link.FormatDuration(r.Elapsed)}
	for _, rt := range t.Timings() {
		c.Rows = append(c.Rows, waterfall.Row{Label: rt.Path, Note: fmt.Sprintf("conn %d", rt.Conn), Segments: segments(rt)})
	}
	return c, true
}

// segments splits a request's timing into the waterfall's phases: queued
// from its issue to its first handshake (or, without one, to its
// sending), and between its handshakes and its sending; then waiting for
// the first byte and receiving the rest.
func segments(rt web.ResourceTiming) []waterfall.Segment {
	var out []waterfall.Segment
	at := rt.Start
	add := func(p waterfall.Phase, from, to time.Duration) {
		if from > at {
			out = append(out, waterfall.Segment{Phase: waterfall.Queued, Start: at.Seconds(), End: from.Seconds()})
		}
		out = append(out, waterfall.Segment{Phase: p, Start: from.Seconds(), End: to.Seconds()})
		at = to
	}
	for _, h := range []struct {
		p waterfall.Phase
		s *web.Span
	}{{waterfall.DNS, rt.DNS}, {waterfall.Connect, rt.Connect}, {waterfall.TLS, rt.TLS}} {
		if h.s != nil {
			add(h.p, h.s.Start, h.s.End)
		}
	}
	add(waterfall.Waiting, rt.Sent, rt.FirstByte)
	add(waterfall.Receiving, rt.FirstByte, rt.LastByte)
	return out
}
