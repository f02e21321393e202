package experiment

import (
	"reflect"
	"strings"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// A Grid is a study's cases written as lists: every combination of its
// axes' values makes one link (the last axis varying fastest), and each
// link runs with every TCP of TCPs and, within each TCP, every workload
// of Workloads, in that order.
//
//	g := experiment.Grid{
//		Axes:      []experiment.Axis{rtts, losses},
//		Workloads: []workloads.Workload{workloads.Bulk{}},
//		Case:      experiment.Case{Link: link.Config{MTU: 1500}},
//	}
//	if g.Cells() > experiment.MaxCells { … }
//	cases, err := g.Cases()
type Grid struct {
	// Axes are the lists of link settings, outermost first.
	Axes []Axis
	// Shape, if not nil, is called on each combination's link after the
	// axes that are not Late and before those that are: it applies what
	// every cell shares and what may set the directions apart (netem
	// lines, a queue discipline per direction), or refuses the link.
	// Its error is returned as it is.
	Shape func(link.Config) (link.Config, error)
	// TCPs are the TCPs each link runs with; empty runs Case.TCP alone.
	TCPs []tcpstack.Impl
	// Workloads run on each link with each TCP.
	Workloads []workloads.Workload
	// Case is what every case starts from: its Link is the link the axes
	// set their values on (its MTU, say), its TCP gives the settings
	// other than the Impl, and its clock and seed are every case's. Its
	// Workload is replaced by each of Workloads.
	Case Case
}

// An Axis is a list of values of one link setting.
type Axis struct {
	Name string // what it varies, as the command calls it: "rtt", "loss"
	N    int    // how many values, 1 or more
	// Label names value i in a table cell ("loss 1%"); "" names nothing
	// (no trace).
	Label func(i int) string
	// Slug names value i in a file name ("loss1pct").
	Slug func(i int) string
	// Apply sets value i on a link.
	Apply func(i int, c *link.Config)
	// Late applies the values after Grid.Shape, which may set the
	// directions apart (a trace is one direction's).
	Late bool
	// Column: the values have columns of their own in the table
	// (TableHeader's rtt and rate) and a place of their own in
	// Grid.Variant, so Grid.Swept leaves the axis out.
	Column bool
}

// Index returns the value of a that lc has: the first whose Apply
// leaves lc as it is.
func (a Axis) Index(lc link.Config) (int, bool) {
	for i := range a.N {
		c := lc
		a.Apply(i, &c)
		if reflect.DeepEqual(c, lc) {
			return i, true
		}
	}
	return 0, false
}

// Cells counts the cases Cases makes, without building any: the
// product of the axes' lengths, the TCPs and the workloads. A count
// past MaxCells stops at MaxCells+1, so it cannot overflow.
func (g *Grid) Cells() int {
	cells := len(g.Workloads) * max(len(g.TCPs), 1)
	cells = min(cells, MaxCells+1)
	for _, a := range g.Axes {
		cells = min(cells*min(a.N, MaxCells+1), MaxCells+1)
	}
	return cells
}

// LinkAt is the link of one combination of the axes' values (idx[k]
// picks axis k's), not yet validated: the axes that are not Late, Shape,
// then the Late axes.
func (g *Grid) LinkAt(idx []int) (link.Config, error) {
	lc := g.Case.Link
	for k, a := range g.Axes {
		if !a.Late {
			a.Apply(idx[k], &lc)
		}
	}
	if g.Shape != nil {
		var err error
		if lc, err = g.Shape(lc); err != nil {
			return lc, err
		}
	}
	for k, a := range g.Axes {
		if a.Late {
			a.Apply(idx[k], &lc)
		}
	}
	return lc, nil
}

// Labels names one combination of the axes' values (idx[k] picks axis
// k's), a label per axis that has one: "rtt 50 ms", "10mbit".
func (g *Grid) Labels(idx []int) []string {
	var labels []string
	for k, a := range g.Axes {
		if l := a.Label(idx[k]); l != "" {
			labels = append(labels, l)
		}
	}
	return labels
}

// Cases makes the grid's cases, Cells of them, in the grid's order. A
// link that is not valid is a *CellError, one whose RTT no TCP
// handshake completes a *HandshakeError; Shape's errors come as they
// are. Count the cells first (Cells): Cases builds every one.
func (g *Grid) Cases() ([]Case, error) {
	impls := g.TCPs
	if len(impls) == 0 {
		impls = []tcpstack.Impl{g.Case.TCP.Impl}
	}
	var cases []Case
	idx := make([]int, len(g.Axes))
	for {
		lc, err := g.LinkAt(idx)
		if err != nil {
			return nil, err
		}
		if err := lc.Validate(); err != nil {
			return nil, &CellError{Label: strings.Join(g.Labels(idx), ", "), Err: err}
		}
		if rtt := (Case{Link: lc}).RTT(); rtt > MaxHandshakeRTT {
			return nil, &HandshakeError{RTT: rtt}
		}
		for _, impl := range impls {
			for _, w := range g.Workloads {
				c := g.Case
				c.Workload, c.Link, c.TCP.Impl = w, lc, impl
				cases = append(cases, c)
			}
		}
		if !g.next(idx) {
			return cases, nil
		}
	}
}

// next moves idx to the next combination, the last axis varying
// fastest; false after the last.
func (g *Grid) next(idx []int) bool {
	for k := len(g.Axes) - 1; k >= 0; k-- {
		if idx[k]++; idx[k] < g.Axes[k].N {
			return true
		}
		idx[k] = 0
	}
	return false
}

// A CellError is a combination of a grid's values whose link is not
// valid.
type CellError struct {
	Label string // the combination's labels (Grid.Labels), joined by ", "
	Err   error  // link.Config.Validate's
}

// Error names the combination, then what is wrong with its link.
func (e *CellError) Error() string { return e.Label + ": " + e.Err.Error() }

// Unwrap returns Validate's error.
func (e *CellError) Unwrap() error { return e.Err }

// Swept names c, one of the grid's cases, by its values on the axes of
// several values that have no column of their own (Axis.Column): the
// label and the slug of each, and its TCP's when the grid has several.
func (g *Grid) Swept(c Case) (labels, slugs []string) {
	for _, a := range g.Axes {
		if a.N < 2 || a.Column {
			continue
		}
		if i, ok := a.Index(c.Link); ok {
			labels, slugs = append(labels, a.Label(i)), append(slugs, a.Slug(i))
		}
	}
	if len(g.TCPs) > 1 {
		impl := c.TCP.Impl.OrDefault()
		labels, slugs = append(labels, "tcp "+string(impl)), append(slugs, "tcp-"+string(impl))
	}
	return labels, slugs
}

// CaseName is the table's case column (TableHeader) for c, one of the
// grid's cases: its swept values (Swept) and its workload's variant.
func (g *Grid) CaseName(c Case) string {
	parts, _ := g.Swept(c)
	if v := c.Workload.Variant(); v != "" {
		parts = append(parts, v)
	}
	return strings.Join(parts, ", ")
}

// Variant names c, one of the grid's cases, among the others, for file
// names: "" when the grid has one case; otherwise its RTT and rate, its
// other swept values (Swept) and its workload's variant:
// "rtt50.0ms-10mbit-loss1pct-nagle-on".
func (g *Grid) Variant(c Case) string {
	if g.Cells() < 2 {
		return ""
	}
	v := "rtt" + strings.ReplaceAll(fmtDur(c.RTT()), " ", "") + "-" + c.RateLabel()
	if _, slugs := g.Swept(c); len(slugs) > 0 {
		v += "-" + strings.Join(slugs, "-")
	}
	if w := c.Workload.Variant(); w != "" {
		v += "-" + slug(w)
	}
	return v
}

// slug makes words fit a file name: "nagle on, split" → "nagle-on-split".
func slug(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r == ' ' || r == ',' || r == '=' || r == '/'
	}), "-")
}
