package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
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
	impls := o.tcp.vals
	many := len(impls) > 1
	if !o.json {
		if many {
			// A column of each TCP, then each against the kernel.
			var cols, vs []string
			for _, impl := range impls {
				cols = append(cols, string(impl))
				vs = append(vs, string(impl)+" vs kernel")
			}
			fmt.Fprintf(tw, "workload\trtt\trate\tcase\t%s\tkernel\tmodel\t%s\t\n", strings.Join(cols, "\t"), strings.Join(vs, "\t"))
		} else {
			fmt.Fprintln(tw, "workload\trtt\trate\tcase\temulated\tkernel\tmodel\temulated vs kernel\t")
		}
	}
	var facts string
	var details []string // each case's summaries, when the kind has details
	bar := newProgress(stderr, len(cases)*(len(impls)+1), true)
	defer bar.close()
	for _, c := range cases {
		vname := o.caseVariant(c, len(cases) > 1)
		var ers []workloads.Result
		var erecs []experiment.Record
		var ewatch0 *experiment.Watch
		for k, impl := range impls {
			bar.start(caseLabel(c) + " tcp " + string(impl))
			ec := c
			ec.Clock = emu.Virtual
			ec.TCP.Impl = impl
			name := vname
			if many {
				name = joinVariant(vname, string(impl))
			}
			er, erec, ewatch, err := o.measure(ctx, emulated, ec, name, false)
			bar.finish()
			if err != nil {
				return err
			}
			ers, erecs = append(ers, er), append(erecs, erec)
			if k == 0 {
				ewatch0 = ewatch
			}
		}
		bar.start(caseLabel(c) + " kernel")
		kr, krec, kwatch, err := o.measure(ctx, kern, c, joinVariant(vname, "kernel"), false)
		bar.finish()
		if err != nil {
			return err
		}
		if o.plot != "" {
			path := variantPath(o.plot, vname)
			ec := c
			ec.TCP.Impl = impls[0]
			if err := experiment.CompareFigure(ec, ers[0], kr, ewatch0, kwatch).Save(path); err != nil {
				return err
			}
			o.wrote("plot", path)
		}
		if o.json {
			for _, erec := range erecs {
				if err := enc.Encode(erec); err != nil {
					return err
				}
			}
			if err := enc.Encode(krec); err != nil {
				return err
			}
			continue
		}
		kg, _ := kr.Headline()
		_, model := ers[0].Headline()
		var cols, vs []string
		for _, er := range ers {
			eg, _ := er.Headline()
			cols = append(cols, fmtDur(eg))
			vs = append(vs, pct(experiment.Ms(eg), experiment.Ms(kg)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", ers[0].Workload, fmtDur(c.RTT()), c.RateLabel(),
			o.caseName(c), strings.Join(cols, "\t"), fmtDur(kg), fmtDur(model), strings.Join(vs, "\t"))
		if o.kind.Details {
			name := o.caseName(c)
			if name == "" {
				name = ers[0].Workload
			}
			var parts []string
			for k, er := range ers {
				label := "emulated"
				if many {
					label = string(impls[k])
				}
				parts = append(parts, label+" "+er.Detail.Summary())
			}
			details = append(details, fmt.Sprintf("  %s: %s; kernel %s", name, strings.Join(parts, "; "), kr.Detail.Summary()))
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
	var names []string
	for _, impl := range impls {
		names = append(names, implName(impl))
	}
	label := "emulated"
	if many {
		label = o.tcp.String()
	}
	fmt.Fprintf(w, "\n%s: %s on the virtual clock; kernel: %s.\n", label, strings.Join(names, ", "), facts)
	if o.kind.Headline != "" {
		fmt.Fprintf(w, "%s rows show the %s.\n", o.kind.Name, o.kind.Headline)
	}
	return nil
}

// implName is how a footer names a TCP.
func implName(i tcpstack.Impl) string {
	if i == tcpstack.Netemu {
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
