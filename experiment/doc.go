// Package experiment runs workloads on backends and describes the runs:
// a Case is one workload on one link; a Grid crosses lists of link
// settings with TCPs and workloads into cases; a Backend runs a case on
// emulated hosts or over kernel TCP; a Record is the run as one JSON
// object; Instruments fan the link's events out to a pcap file, a
// timeline and the explain recorder; figures draw what they saw.
//
//	c := experiment.Case{
//		Workload: workloads.KeepAlive{Mode: workloads.Fresh},
//		Link:     link.Config{Delay: 25 * time.Millisecond, Rate: 10e6},
//	}
//	r, rec, err := experiment.Emulated{}.Run(ctx, c)
//
// The command netemu is a thin layer over this package; everything it
// prints comes from a Result and a Record.
package experiment
