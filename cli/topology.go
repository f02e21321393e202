package cli

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/internal/english"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/topo"
	"github.com/netemu/netemu/workloads"
)

// The shapes --topology names: each builds its topology and flows around
// the bottleneck the link flags describe.
var shapes = []struct {
	name  string
	build func(n int, access []time.Duration) func(link.Config) (topo.Topology, []topo.Flow)
}{
	{"dumbbell", func(n int, access []time.Duration) func(link.Config) (topo.Topology, []topo.Flow) {
		return func(lc link.Config) (topo.Topology, []topo.Flow) { return topo.Dumbbell(n, access, lc) }
	}},
	{"star", func(n int, _ []time.Duration) func(link.Config) (topo.Topology, []topo.Flow) {
		return func(lc link.Config) (topo.Topology, []topo.Flow) { return topo.Star(n, lc) }
	}},
	{"chain", func(n int, _ []time.Duration) func(link.Config) (topo.Topology, []topo.Flow) {
		return func(lc link.Config) (topo.Topology, []topo.Flow) { return topo.Chain(n, lc) }
	}},
}

// shapeNames lists the shapes as --topology takes them, for messages.
func shapeNames() string {
	var names []string
	for _, s := range shapes {
		names = append(names, s.name+":N")
	}
	return english.Or(names...)
}

// network is the shape --topology and --access-rtt describe; nil
// without --topology.
func (o *Options) network() (*experiment.Shape, error) {
	if o.file != nil {
		if o.accessRTT != "" {
			return nil, Usagef("--access-rtt does not apply to --topology %s: the file gives each link its delay", o.topology)
		}
		if err := o.file.unshaped(o.Given); err != nil {
			return nil, err
		}
		return o.file.shape(), nil
	}
	if o.topology != "" && isTopoFile(o.topology) {
		// A workload was named, so the file was not read.
		return nil, Usagef("%s %s: --topology %s gives each flow its workload; drop %s", o.cmd.Name, o.kind.Name, o.topology, o.kind.Name)
	}
	if o.topology == "" {
		if o.accessRTT != "" {
			return nil, Usagef("--access-rtt %s does not apply: it gives a dumbbell's clients their round trips; add --topology dumbbell:N", o.accessRTT)
		}
		return nil, nil
	}
	name, count, _ := strings.Cut(o.topology, ":")
	for _, s := range shapes {
		if s.name != name {
			continue
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 {
			return nil, Usagef("--topology %s: want %s:N with N a count of 1 or more, like %s:2", o.topology, name, name)
		}
		var access []time.Duration
		if o.accessRTT != "" {
			if name != "dumbbell" {
				return nil, Usagef("--access-rtt does not apply to --topology %s: it gives a dumbbell's clients their round trips", o.topology)
			}
			if access, err = parseAccess(o.accessRTT, n); err != nil {
				return nil, err
			}
		}
		build := s.build(n, access)
		if t, _ := build(link.Config{}); t.Validate() != nil {
			return nil, Usagef("--topology %s: %v", o.topology, strings.TrimPrefix(t.Validate().Error(), "topology: "))
		}
		label := o.topology
		if o.accessRTT != "" {
			label += " access-rtt " + o.accessRTT
		}
		return &experiment.Shape{Name: label, Build: build}, nil
	}
	return nil, Usagef("--topology %q: want %s, or a topology file (FILE.yaml)", o.topology, shapeNames())
}

// parseAccess reads --access-rtt: a duration per client, at most n.
func parseAccess(s string, n int) ([]time.Duration, error) {
	words := strings.Split(s, ",")
	if len(words) > n {
		return nil, Usagef("--access-rtt %s: %d round trips for %d clients; give at most one per client", s, len(words), n)
	}
	var out []time.Duration
	for _, w := range words {
		d, err := parseDuration("access RTT")(strings.TrimSpace(w))
		if err != nil {
			return nil, Usagef("--access-rtt: %v", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// WriteShape writes a shape's run under its row: a row per flow (its
// hosts, workload, time, goodput, share and retransmissions), then a row
// per link direction that has a rate or dropped packets (delivered,
// dropped by reason, utilisation, queueing delay p50 and p99); title
// names the case.
func WriteShape(w io.Writer, title string, d experiment.ShapeDetail) error {
	fmt.Fprintf(w, "\n%s: %s, Jain's index %.3f\n", title, d.Shape, d.Jain)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "flow\tworkload\trtt\telapsed\tgoodput\tshare\tretransmits\t")
	for i, f := range d.Flows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f Mbit/s\t%.1f%%\t%d\t\n", f.Name, f.Workload, fmtDur(f.RTT), fmtDur(f.Elapsed), f.Goodput/1e6, 100*d.Share[i], f.Retransmits)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "link\tdirection\tdelivered\tdropped\tutilisation\tqueue p50\tqueue p99\t")
	quiet := 0
	for _, l := range d.Links {
		if l.Utilisation == 0 && l.Dropped == 0 {
			quiet++
			continue
		}
		dropped := strconv.FormatUint(l.Dropped, 10)
		for _, r := range slices.Sorted(maps.Keys(l.DropsBy)) {
			dropped += fmt.Sprintf(" (%s %d)", r, l.DropsBy[r])
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.1f%%\t%s\t%s\t\n", l.Link, l.Dir, l.Delivered, dropped, 100*l.Utilisation, fmtDur(l.QueueDelay50), fmtDur(l.QueueDelay99))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if quiet > 0 {
		fmt.Fprintf(w, "(%d more link directions carried packets with no rate limit and no drop; --json lists them)\n", quiet)
	}
	// How the flows that cross a limited link direction shared it.
	for _, l := range d.Links {
		if len(l.Shares) == 0 || l.Utilisation == 0 && l.Dropped == 0 {
			continue
		}
		var parts []string
		for _, s := range l.Shares {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", s.Flow, 100*s.Share))
		}
		fmt.Fprintf(w, "%s %s, shared by %s: Jain's index %.3f\n", l.Link, l.Dir, strings.Join(parts, ", "), l.Jain)
	}
	return nil
}

// fromTopoFile finishes parseArgs for --topology FILE: the file gives
// the flows their workloads, so the arguments after the shared flags
// (rest) must be none; the cases' workload is the first flow's.
func (o *Options) fromTopoFile(fs *flag.FlagSet, rest []string) error {
	if len(rest) > 0 {
		return Usagef("%s: %q: --topology %s gives each flow its workload; drop %s", o.cmd.Name, rest[0], o.topology, rest[0])
	}
	f, err := readTopoFile(o.topoFS, o.topology)
	if err != nil {
		return err
	}
	o.file = f
	first := f.each[0].Workload
	o.kind, _ = workloads.Lookup(first.Name())
	o.build = func() ([]workloads.Workload, error) { return []workloads.Workload{first}, nil }
	o.set = setFlags(fs)
	if err := o.NotApplicable(); err != nil {
		return err
	}
	return o.CheckOutputs()
}
