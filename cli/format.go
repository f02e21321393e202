package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/link"
)

var fmtDur = link.FormatDuration

// VariantPath inserts a case's variant into a file name when a command
// runs several cases: nagle.pcap → nagle-nagle-on-split.pcap. An empty
// path stays empty.
func VariantPath(path, variant string) string {
	if variant == "" || path == "" {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + variant + ext
}

// LinkPath is a real program's way across link lc, as proxy and shell
// Announce it: "RTT 100ms, 10 Mbit/s".
func LinkPath(lc link.Config) string {
	c := experiment.Case{Link: lc}
	return fmt.Sprintf("RTT %s, %s", fmtDur(c.RTT()), c.RateLabel())
}

// CaseLabel names a case for the progress bar.
func CaseLabel(c experiment.Case) string {
	label := fmt.Sprintf("%s rtt %s rate %s", c.Workload.Name(), fmtDur(c.RTT()), c.RateLabel())
	if v := c.Workload.Variant(); v != "" {
		label += " " + v
	}
	return label
}

// Sections writes tables one after another, each under its title, with a
// blank line between them: the layout of reproduce's tables.
type Sections struct {
	w     io.Writer
	tw    *tabwriter.Writer
	title string
}

// table returns the writer of the table titled title, starting it (with
// header as its first row) when the title changes.
func (s *Sections) Table(title, header string) *tabwriter.Writer {
	if s.tw == nil || title != s.title {
		if s.Flush() {
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
func (s *Sections) Flush() bool {
	if s.tw == nil {
		return false
	}
	s.tw.Flush()
	return true
}

// NewSections returns the writer of tables one after another on w.
func NewSections(w io.Writer) *Sections { return &Sections{w: w} }
