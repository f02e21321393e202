package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/link"
)

var fmtDur = link.FormatDuration

// pct is got's difference from want in percent; "—" where either is 0.
func pct(got, want float64) string {
	if want == 0 || got == 0 {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", (got-want)/want*100)
}

// variantPath inserts a case's variant into a file name when a command
// runs several cases: nagle.pcap → nagle-nagle-on-split.pcap. An empty
// path stays empty.
func variantPath(path, variant string) string {
	if variant == "" || path == "" {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + variant + ext
}

// slug makes words fit a file name: "nagle on, split" → "nagle-on-split".
func slug(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r == ' ' || r == ',' || r == '=' || r == '/'
	}), "-")
}

// caseVariant names what distinguishes a case among several: nothing if
// it runs alone; otherwise the link values (queue and delayed ACK only
// when they are swept) and the workload's variant.
func (o *options) caseVariant(c experiment.Case, many bool) string {
	if !many {
		return ""
	}
	v := fmt.Sprintf("rtt%s-%s", strings.ReplaceAll(fmtDur(2*c.Link.Delay), " ", ""), link.FormatRate(c.Link.Rate))
	if len(o.queue.vals) > 1 {
		if c.Link.QueueBytes > 0 {
			v += fmt.Sprintf("-queue%dB", c.Link.QueueBytes)
		} else {
			v += fmt.Sprintf("-queue%d", c.Link.QueuePackets)
		}
	}
	if len(o.delack.vals) > 1 {
		v += "-delack" + strings.ReplaceAll(fmtDur(c.Link.DelayedACK), " ", "")
	}
	if w := c.Workload.Variant(); w != "" {
		v += "-" + slug(w)
	}
	return v
}

// caseName is the table's case column: the workload's variant, and the
// queue and delayed ACK when they are swept.
func (o *options) caseName(c experiment.Case) string {
	var parts []string
	if len(o.queue.vals) > 1 {
		if c.Link.QueueBytes > 0 {
			parts = append(parts, fmt.Sprintf("queue %d B", c.Link.QueueBytes))
		} else {
			parts = append(parts, fmt.Sprintf("queue %d", c.Link.QueuePackets))
		}
	}
	if len(o.delack.vals) > 1 {
		parts = append(parts, "delack "+fmtDur(c.Link.DelayedACK))
	}
	if v := c.Workload.Variant(); v != "" {
		parts = append(parts, v)
	}
	return strings.Join(parts, ", ")
}

// caseLabel names a case for the progress bar.
func caseLabel(c experiment.Case) string {
	label := fmt.Sprintf("%s rtt %s rate %s", c.Workload.Name(), fmtDur(2*c.Link.Delay), link.FormatRate(c.Link.Rate))
	if v := c.Workload.Variant(); v != "" {
		label += " " + v
	}
	return label
}
