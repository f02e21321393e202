package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
)

// cmdCompare runs each case on the emulator (virtual clock) and on kernel
// TCP over the same link, side by side.
func cmdCompare(ctx context.Context, args []string, w, stderr io.Writer) error {
	o, cases, err := parseCases("compare", args, false)
	if err != nil {
		return err
	}
	o.printNotes(stderr)
	defer o.announce(stderr)
	emulated, err := o.newBackend(experiment.Emulated{}.Name())
	if err != nil {
		return err
	}
	kern, err := o.newBackend(experiment.Kernel{}.Name())
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if !o.json {
		fmt.Fprintln(tw, "workload\trtt\trate\tcase\temulated\tkernel\tmodel\temulated vs kernel\t")
	}
	var facts string
	var details []string // each case's summaries, when the kind has details
	bar := newProgress(stderr, len(cases), true)
	defer bar.close()
	for _, c := range cases {
		bar.start(caseLabel(c))
		ec := c
		ec.Clock = emu.Virtual
		vname := o.caseVariant(c, len(cases) > 1)
		er, erec, ewatch, err := o.measure(ctx, emulated, ec, vname, false)
		if err != nil {
			return err
		}
		kr, krec, kwatch, err := o.measure(ctx, kern, c, joinVariant(vname, "kernel"), false)
		bar.finish()
		if err != nil {
			return err
		}
		if o.plot != "" {
			path := variantPath(o.plot, vname)
			if err := experiment.CompareFigure(experiment.Title(c.Workload), er, kr, ewatch, kwatch).Save(path); err != nil {
				return err
			}
			o.wrote("plot", path)
		}
		if o.json {
			if err := enc.Encode(erec); err != nil {
				return err
			}
			if err := enc.Encode(krec); err != nil {
				return err
			}
			continue
		}
		eg, model := er.Headline()
		kg, _ := kr.Headline()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", er.Workload, fmtDur(c.RTT()), c.RateLabel(),
			o.caseName(c), fmtDur(eg), fmtDur(kg), fmtDur(model), pct(experiment.Ms(eg), experiment.Ms(kg)))
		if o.kind.Details {
			name := o.caseName(c)
			if name == "" {
				name = er.Workload
			}
			details = append(details, fmt.Sprintf("  %s: emulated %s; kernel %s", name, er.Detail.Summary(), kr.Detail.Summary()))
		}
		facts = krec.Kernel.String()
		if krec.LateMeanUs != nil {
			facts += fmt.Sprintf("; bridge delivery late by %.0f µs mean, %.0f µs p99", *krec.LateMeanUs, *krec.LateP99Us)
		}
	}
	if o.json {
		return nil
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range details {
		fmt.Fprintln(w, d)
	}
	fmt.Fprintf(w, "\nemulated: gVisor TCP on the virtual clock; kernel: %s.\n", facts)
	if o.kind.Headline != "" {
		fmt.Fprintf(w, "%s rows show the %s.\n", o.kind.Name, o.kind.Headline)
	}
	return nil
}

// joinVariant adds a word to a variant name.
func joinVariant(variant, word string) string {
	if variant == "" {
		return word
	}
	return variant + "-" + word
}
