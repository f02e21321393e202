package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/internal/english"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// compare's table: each case on the emulator, with each TCP of --tcp,
// and on kernel TCP, side by side.

// CompareCommand is netemu compare's command: the shared flags it takes
// and refuses. A question's cells are its command lines.
var CompareCommand = Command{Name: "compare", BothBackends: true, Rules: Rules{Groups: append([]*Group{&TopologyGroup}, LinkRunGroups...), Refuse: map[string]string{
	"backend":   "compare runs both backends",
	"waterfall": "compare draws no waterfall; use netemu run",
	"clock":     "compare runs the emulator on the virtual clock and kernel TCP in real time"}}}

// Compare runs each of cases, parsed by ParseCases for a command with
// BothBackends, on the emulator (virtual clock) with each TCP of --tcp
// and on kernel TCP over the same link, and writes them side by side on
// w, as a table or JSON lines; the progress bar goes to stderr.
func Compare(ctx context.Context, o *Options, cases []experiment.Case, w, stderr io.Writer) error {
	emulated, err := o.NewBackend(experiment.Emulated{}.Name())
	if err != nil {
		return err
	}
	kern, err := o.NewBackend(experiment.Kernel{}.Name())
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if !o.JSON {
		compareHeader(tw, o.TCPs())
	}
	var facts string
	var details []string // each case's summaries, when the kind has details
	var shapes []string  // each topology case's flows, both backends
	var late []string    // the cases whose kernel figure is suspect, and why
	bar := NewProgress(stderr, len(cases)*(len(o.TCPs())+1), true)
	defer bar.Close()
	for _, c := range cases {
		m, err := o.compareCase(ctx, emulated, kern, c, o.Grid().Variant(c), bar)
		if err != nil {
			return err
		}
		if o.JSON {
			if err := m.encode(enc); err != nil {
				return err
			}
			continue
		}
		if d := o.compareRow(tw, c, m); d != "" {
			details = append(details, d)
		}
		if t := compareShape(CaseLabel(c), m); t != "" {
			shapes = append(shapes, t)
		}
		if why := m.kernelRec.BridgeLate; why != "" {
			late = append(late, fmt.Sprintf("* %s: %s", CaseLabel(c), why))
		}
		facts = m.kernelFacts()
	}
	if o.JSON {
		return nil
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range details {
		fmt.Fprintln(w, d)
	}
	for _, t := range shapes {
		fmt.Fprint(w, t)
	}
	for _, l := range late {
		fmt.Fprintln(w, l)
	}
	o.compareFooter(w, facts)
	return nil
}

// compareHeader writes the table's header: with one TCP, the emulated
// and kernel columns; with several, a column of each TCP, then each
// against the kernel.
func compareHeader(tw io.Writer, impls []tcpstack.Impl) {
	if len(impls) <= 1 {
		fmt.Fprintln(tw, "workload\trtt\trate\tcase\temulated\tkernel\tmodel\temulated vs kernel\t")
		return
	}
	var cols, vs []string
	for _, impl := range impls {
		cols = append(cols, string(impl))
		vs = append(vs, string(impl)+" vs kernel")
	}
	fmt.Fprintf(tw, "workload\trtt\trate\tcase\t%s\tkernel\tmodel\t%s\t\n", strings.Join(cols, "\t"), strings.Join(vs, "\t"))
}

// comparison is one case measured on the emulator with each TCP of
// --tcp, in its order, and on kernel TCP.
type comparison struct {
	emulated    []workloads.Result
	records     []experiment.Record
	watch       *experiment.Watch // the first TCP's run's
	kernel      workloads.Result
	kernelRec   experiment.Record
	kernelWatch *experiment.Watch
}

// compareCase measures case c, named vname, on emulated (virtual clock)
// with each TCP of --tcp and on kern, a step of bar each, and draws
// --plot's figure of the first TCP against the kernel.
func (o *Options) compareCase(ctx context.Context, emulated, kern experiment.Backend, c experiment.Case, vname string, bar *Progress) (comparison, error) {
	var m comparison
	impls := o.TCPs()
	for k, impl := range impls {
		bar.Start(CaseLabel(c) + " tcp " + string(impl))
		ec := c
		ec.Clock = emu.Virtual
		ec.TCP.Impl = impl
		name := vname
		if len(impls) > 1 {
			name = joinVariant(vname, string(impl))
		}
		er, erec, ewatch, err := o.Measure(ctx, emulated, ec, name, false)
		bar.Finish()
		if err != nil {
			return m, err
		}
		m.emulated, m.records = append(m.emulated, er), append(m.records, erec)
		if k == 0 {
			m.watch = ewatch
		}
	}
	bar.Start(CaseLabel(c) + " kernel")
	var err error
	m.kernel, m.kernelRec, m.kernelWatch, err = o.Measure(ctx, kern, c, joinVariant(vname, "kernel"), false)
	bar.Finish()
	if err != nil {
		return m, err
	}
	if o.Plot != "" {
		path := VariantPath(o.Plot, vname)
		ec := c
		ec.TCP.Impl = impls[0]
		if err := experiment.CompareFigure(ec, m.emulated[0], m.kernel, m.watch, m.kernelWatch).Save(path); err != nil {
			return m, err
		}
		o.Wrote("plot", path)
	}
	return m, nil
}

// encode writes m's records as JSON lines: each TCP's, then the
// kernel's.
func (m comparison) encode(enc *json.Encoder) error {
	for _, erec := range m.records {
		if err := enc.Encode(erec); err != nil {
			return err
		}
	}
	return enc.Encode(m.kernelRec)
}

// compareRow writes case c's row of the table and returns its line of
// details, the summaries of each run, when the kind has details ("" when
// not).
func (o *Options) compareRow(tw io.Writer, c experiment.Case, m comparison) string {
	cols, kernel, model, vs := m.cells(c)
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m.emulated[0].Workload, fmtDur(c.RTT()), c.RateLabel(),
		o.Grid().CaseName(c), strings.Join(cols, "\t"), kernel, model, strings.Join(vs, "\t"))
	if !o.Kind().Details {
		return ""
	}
	name := o.Grid().CaseName(c)
	if name == "" {
		name = m.emulated[0].Workload
	}
	var parts []string
	for k, er := range m.emulated {
		label := "emulated"
		if len(m.emulated) > 1 {
			label = string(o.TCPs()[k])
		}
		parts = append(parts, label+" "+er.Detail.Summary())
	}
	return fmt.Sprintf("  %s: %s; kernel %s", name, strings.Join(parts, "; "), m.kernel.Detail.Summary())
}

// cells are the figures of case c's row: each TCP's headline, the
// kernel's (with a * where its bridge was late: Record.BridgeLate), the
// model's, and each TCP's against the kernel. A case of a
// fixed duration whose headline is its elapsed time (share) has "—" in
// each: that time is the duration it was given, and the details under
// the table are its result.
func (m comparison) cells(c experiment.Case) (cols []string, kernel, model string, vs []string) {
	kg, _ := m.kernel.Headline()
	_, mg := m.emulated[0].Headline()
	blank := c.TimedByDuration()
	for _, er := range m.emulated {
		eg, _ := er.Headline()
		if blank {
			cols, vs = append(cols, "—"), append(vs, "—")
			continue
		}
		cols = append(cols, fmtDur(eg))
		vs = append(vs, experiment.Deviation(experiment.Ms(eg), experiment.Ms(kg)))
	}
	kernel, model = fmtDur(kg), fmtDur(mg)
	if blank {
		kernel, model = "—", "—"
	}
	if m.kernelRec.BridgeLate != "" {
		kernel += "*" // why is said under the table
	}
	return cols, kernel, model, vs
}

// kernelFacts describes the kernel m ran on, and, when measured, how
// late the bridge delivered. Where the flows set their own congestion
// controls (share's --ccs), the facts name those instead of the one the
// routes pin.
func (m comparison) kernelFacts() string {
	f := *m.kernelRec.Kernel
	if ccs := flowCCs(m.kernel); ccs != "" {
		f.CongestionControl = ccs + " (each flow's, from --ccs)"
	}
	facts := f.String()
	if m.kernelRec.LateMeanUs != nil {
		facts += fmt.Sprintf("; bridge delivery late by %.0f µs mean, %.0f µs p99", *m.kernelRec.LateMeanUs, *m.kernelRec.LateP99Us)
		if m.kernelRec.LateMaxUs != nil {
			facts += fmt.Sprintf(", %.0f µs at most", *m.kernelRec.LateMaxUs)
		}
	}
	return facts
}

// compareFooter writes the line under the table that names the TCPs
// compared and the kernel's facts, and what the rows show.
func (o *Options) compareFooter(w io.Writer, facts string) {
	var names []string
	for _, impl := range o.TCPs() {
		names = append(names, implName(impl))
	}
	label := "emulated"
	if len(o.TCPs()) > 1 {
		label = o.TCPList()
	}
	fmt.Fprintf(w, "\n%s: %s on the virtual clock; kernel: %s.\n", label, strings.Join(names, ", "), facts)
	if o.Kind().Headline != "" {
		fmt.Fprintf(w, "%s rows show the %s.\n", o.Kind().Name, o.Kind().Headline)
	}
}

// flowCCs names the congestion controls r's flows set for themselves,
// each once, in flow order: "cubic and reno"; "" where they set none.
func flowCCs(r workloads.Result) string {
	d, ok := r.Detail.(workloads.ShareDetail)
	if !ok {
		return ""
	}
	var names []string
	for _, cc := range d.CCs {
		if !slices.Contains(names, cc) {
			names = append(names, cc)
		}
	}
	return english.And(names...)
}

// implName is how a footer names a TCP.
func implName(i tcpstack.Impl) string {
	if i.OrDefault() == tcpstack.Netemu {
		return "netemu's TCP"
	}
	return "gVisor TCP"
}

// joinVariant adds a word to a variant name.
func joinVariant(variant, word string) string {
	if variant == "" {
		return word
	}
	return variant + "-" + word
}

// compareShape is the table of a topology case's flows, titled label:
// each flow's goodput on the emulator (the first TCP of --tcp) and on
// kernel TCP, and the kernel's over the emulator's; then both runs'
// Jain's index. "" for a case on the pair.
func compareShape(label string, m comparison) string {
	e, ok := m.emulated[0].Detail.(experiment.ShapeDetail)
	k, ok2 := m.kernel.Detail.(experiment.ShapeDetail)
	if !ok || !ok2 || len(e.Flows) != len(k.Flows) {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s: %s\n", label, e.Shape)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "flow\trtt\temulated\tkernel\tkernel/emulated\t")
	for i, f := range e.Flows {
		ratio := "—"
		if f.Goodput > 0 {
			ratio = fmt.Sprintf("%.2f", k.Flows[i].Goodput/f.Goodput)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f Mbit/s\t%.2f Mbit/s\t%s\t\n", f.Name, fmtDur(f.RTT), f.Goodput/1e6, k.Flows[i].Goodput/1e6, ratio)
	}
	fmt.Fprintf(tw, "Jain's index\t\t%.3f\t%.3f\t%+.3f\t\n", e.Jain, k.Jain, k.Jain-e.Jain)
	tw.Flush()
	return b.String()
}
