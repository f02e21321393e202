package main

import (
	"fmt"
	"github.com/netemu/netemu/tcpstack"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/link"
)

var fmtDur = link.FormatDuration

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

// swept names c's values of the list flags given several values, other
// than the RTT and the rate (which have columns of their own): the value
// whose setting leaves c's link as it is.
func (o *options) swept(c experiment.Case) (labels, slugs []string) {
	for _, a := range o.axes()[2:] {
		if a.n < 2 {
			continue
		}
		for i := range a.n {
			lc := c.Link
			a.apply(i, &lc)
			if reflect.DeepEqual(lc, c.Link) {
				labels, slugs = append(labels, a.label(i)), append(slugs, a.slug(i))
				break
			}
		}
	}
	if len(o.tcp.vals) > 1 && o.sweeping {
		impl := c.TCP.Impl
		if impl == "" {
			impl = tcpstack.GVisor
		}
		labels, slugs = append(labels, "tcp "+string(impl)), append(slugs, "tcp-"+string(impl))
	}
	return labels, slugs
}

// caseVariant names what distinguishes a case among several, for file
// names: nothing if it runs alone; otherwise the RTT and rate, the other
// swept values and the workload's variant.
func (o *options) caseVariant(c experiment.Case, many bool) string {
	if !many {
		return ""
	}
	v := fmt.Sprintf("rtt%s-%s", strings.ReplaceAll(fmtDur(c.RTT()), " ", ""), c.RateLabel())
	if _, slugs := o.swept(c); len(slugs) > 0 {
		v += "-" + strings.Join(slugs, "-")
	}
	if w := c.Workload.Variant(); w != "" {
		v += "-" + slug(w)
	}
	return v
}

// caseName is the table's case column: the swept values other than the
// RTT and the rate, and the workload's variant.
func (o *options) caseName(c experiment.Case) string {
	parts, _ := o.swept(c)
	if v := c.Workload.Variant(); v != "" {
		parts = append(parts, v)
	}
	return strings.Join(parts, ", ")
}

// linkPath is a real program's way across link lc, as proxy and shell
// announce it: "RTT 100ms, 10 Mbit/s".
func linkPath(lc link.Config) string {
	c := experiment.Case{Link: lc}
	return fmt.Sprintf("RTT %s, %s", fmtDur(c.RTT()), c.RateLabel())
}

// caseLabel names a case for the progress bar.
func caseLabel(c experiment.Case) string {
	label := fmt.Sprintf("%s rtt %s rate %s", c.Workload.Name(), fmtDur(c.RTT()), c.RateLabel())
	if v := c.Workload.Variant(); v != "" {
		label += " " + v
	}
	return label
}

// sections writes tables one after another, each under its title, with a
// blank line between them: the layout of reproduce's tables.
type sections struct {
	w     io.Writer
	tw    *tabwriter.Writer
	title string
}

// table returns the writer of the table titled title, starting it (with
// header as its first row) when the title changes.
func (s *sections) table(title, header string) *tabwriter.Writer {
	if s.tw == nil || title != s.title {
		if s.flush() {
			fmt.Fprintln(s.w)
		}
		s.title = title
		fmt.Fprintf(s.w, "%s\n", title)
		s.tw = tabwriter.NewWriter(s.w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(s.tw, header)
	}
	return s.tw
}

// flush ends the last table; it reports whether there was one.
func (s *sections) flush() bool {
	if s.tw == nil {
		return false
	}
	s.tw.Flush()
	return true
}
