package cli

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/topo"
	"github.com/netemu/netemu/workloads"
)

// A topology file describes a network and the flows that run on it, in
// YAML, with the words the command line takes:
//
//	hosts: [c1, c2, s1, s2]          # or {name: s1, addr: 198.18.9.1}
//	routers: [r1, r2]
//	links:                           # from's packets to to are the direction ab
//	  - {from: c1, to: r1, delay: 2ms}
//	  - {from: c2, to: r1, delay: 20ms, rate: 100mbit}
//	  - {from: r1, to: r2, name: core, flags: true}   # the command line's link flags
//	  - {from: r2, to: s1}
//	  - {from: r2, to: s2, netem: "delay 5ms loss 1%", queue: 50}
//	routes:                          # optional: the shortest path otherwise
//	  - {at: r1, to: s2, via: r2}
//	flows:                           # from dials, to listens; start counts from the run's
//	  - {from: c1, to: s1, workload: bulk, size: 2MB}
//	  - {from: c2, to: s2, workload: share, duration: 5s, start: 1s}
//
// A link's words: delay (one way), rate, queue (the FIFO's limit:
// packets or bytes), qdisc, loss, jitter, netem (both directions),
// netem-ab and netem-ba (one direction each), trace-ab and trace-ba
// (mahimahi trace files, relative to the topology file), name, and flags:
// true for the links the command line's link flags shape (--rtt, --rate,
// --loss, ...; their lists sweep). A flow takes its workload's own flags
// by name, as a study file does.

// maxTopoBytes bounds a topology file.
const maxTopoBytes = 4 << 20

// topoFile is a topology file read.
type topoFile struct {
	name  string // the file's base name
	topo  topo.Topology
	flags []int // the links the command line's link flags shape
	flows []topo.Flow
	each  []experiment.ShapeFlow
	nodes []*yaml.Node // each flow's, for messages
}

// isTopoFile reports whether --topology's value names a file rather
// than a built-in shape: a YAML name, or a path that exists.
func isTopoFile(v string) bool {
	if ext := strings.ToLower(filepath.Ext(v)); ext == ".yaml" || ext == ".yml" {
		return true
	}
	_, err := os.Stat(v)
	return err == nil
}

// errAt is a fault of the file at path, at node v's line.
func (f *topoFile) errAt(path string, v *yaml.Node, format string, args ...any) error {
	line := 0
	if v != nil {
		line = v.Line
	}
	return Usagef("--topology %s:%d: %s", path, line, fmt.Sprintf(format, args...))
}

// readTopoFile reads the topology file at path, in fsys where it is
// not nil (the files netemu reproduce carries), else in the file system.
func readTopoFile(fsys fs.FS, path string) (*topoFile, error) {
	read := os.ReadFile
	if fsys != nil {
		read = func(name string) ([]byte, error) { return fs.ReadFile(fsys, name) }
	}
	b, err := read(path)
	if err != nil {
		return nil, Usagef("--topology %s: %v", path, err)
	}
	if len(b) > maxTopoBytes {
		return nil, Usagef("--topology %s: %d bytes; a topology file has at most %d", path, len(b), maxTopoBytes)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, Usagef("--topology %s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	f := &topoFile{name: filepath.Base(path)}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, f.errAt(path, &doc, "want a mapping of hosts, routers, links, routes and flows")
	}
	sections := map[string]func(*yaml.Node) error{
		"hosts":   func(v *yaml.Node) error { return f.hosts(path, v) },
		"routers": func(v *yaml.Node) error { return f.names(path, v, &f.topo.Routers) },
		"links":   func(v *yaml.Node) error { return f.links(path, v) },
		"routes":  func(v *yaml.Node) error { return f.routes(path, v) },
		"flows":   func(v *yaml.Node) error { return f.readFlows(path, v) },
	}
	order := []string{"hosts", "routers", "links", "routes", "flows"}
	got := map[string]*yaml.Node{}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if _, ok := sections[k.Value]; !ok {
			return nil, f.errAt(path, k, "unknown key %q; want %s", k.Value, strings.Join(order, ", "))
		}
		if _, twice := got[k.Value]; twice {
			return nil, f.errAt(path, k, "%s given twice", k.Value)
		}
		got[k.Value] = m.Content[i+1]
	}
	for _, k := range order {
		v, ok := got[k]
		if !ok {
			if k == "routes" || k == "routers" {
				continue
			}
			return nil, f.errAt(path, m, "no %s; a topology file lists %s", k, strings.Join(order, ", "))
		}
		if err := sections[k](v); err != nil {
			return nil, err
		}
	}
	if err := f.topo.Validate(); err != nil {
		return nil, Usagef("--topology %s: %s", path, strings.TrimPrefix(err.Error(), "topology: "))
	}
	tables, err := f.topo.Tables()
	if err != nil {
		return nil, Usagef("--topology %s: %s", path, strings.TrimPrefix(err.Error(), "topology: "))
	}
	for i, fl := range f.flows {
		if _, err := f.topo.RouteWith(tables, fl.From, fl.To); err != nil {
			return nil, f.errAt(path, f.nodes[i], "flow %s>%s: %s", fl.From, fl.To, strings.TrimPrefix(err.Error(), "topology: "))
		}
	}
	return f, nil
}

// seq checks that v is a sequence, for key.
func (f *topoFile) seq(path, key string, v *yaml.Node) error {
	if v.Kind != yaml.SequenceNode {
		return f.errAt(path, v, "%s: want a list", key)
	}
	return nil
}

// names reads a list of names into out.
func (f *topoFile) names(path string, v *yaml.Node, out *[]string) error {
	if err := f.seq(path, "routers", v); err != nil {
		return err
	}
	for _, n := range v.Content {
		if n.Kind != yaml.ScalarNode || n.Value == "" {
			return f.errAt(path, n, "want a name")
		}
		*out = append(*out, n.Value)
	}
	return nil
}

// hosts reads the hosts: names, or mappings of name and addr.
func (f *topoFile) hosts(path string, v *yaml.Node) error {
	if err := f.seq(path, "hosts", v); err != nil {
		return err
	}
	for _, n := range v.Content {
		if n.Kind == yaml.ScalarNode {
			f.topo.Hosts = append(f.topo.Hosts, n.Value)
			continue
		}
		kv, err := f.fields(path, n, "name", "addr")
		if err != nil {
			return err
		}
		name := kv["name"]
		if name == nil {
			return f.errAt(path, n, "a host has no name")
		}
		f.topo.Hosts = append(f.topo.Hosts, name.Value)
		if a := kv["addr"]; a != nil {
			addr, err := netip.ParseAddr(a.Value)
			if err != nil {
				return f.errAt(path, a, "%q is not an IPv4 address; want one in %v, like 198.18.9.1", a.Value, topo.Range)
			}
			if f.topo.Addrs == nil {
				f.topo.Addrs = map[string]netip.Addr{}
			}
			f.topo.Addrs[name.Value] = addr
		}
	}
	return nil
}

// fields reads mapping n, whose keys must be among allowed (none: any),
// into its values by key.
func (f *topoFile) fields(path string, n *yaml.Node, allowed ...string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, f.errAt(path, n, "want a mapping, like {%s: ...}", allowed[0])
	}
	kv := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if len(allowed) > 0 && !slices.Contains(allowed, k.Value) {
			return nil, f.errAt(path, k, "unknown key %q; want %s", k.Value, strings.Join(allowed, ", "))
		}
		if _, twice := kv[k.Value]; twice {
			return nil, f.errAt(path, k, "%s given twice", k.Value)
		}
		if val.Kind != yaml.ScalarNode {
			return nil, f.errAt(path, val, "%s: want one value", k.Value)
		}
		kv[k.Value] = val
	}
	return kv, nil
}

// linkWords are the keys of a link.
var linkWords = []string{"from", "to", "name", "flags", "delay", "rate", "queue", "qdisc", "loss", "jitter", "netem", "netem-ab", "netem-ba", "trace-ab", "trace-ba"}

// links reads the links.
func (f *topoFile) links(path string, v *yaml.Node) error {
	if err := f.seq(path, "links", v); err != nil {
		return err
	}
	for _, n := range v.Content {
		kv, err := f.fields(path, n, linkWords...)
		if err != nil {
			return err
		}
		if kv["from"] == nil || kv["to"] == nil {
			return f.errAt(path, n, "a link needs from and to: {from: c1, to: r1}")
		}
		tl := topo.Link{A: kv["from"].Value, B: kv["to"].Value}
		if nm := kv["name"]; nm != nil {
			tl.Name = nm.Value
		}
		if fl := kv["flags"]; fl != nil {
			if fl.Value != "true" && fl.Value != "false" {
				return f.errAt(path, fl, "flags: want true or false, not %q", fl.Value)
			}
			if fl.Value == "true" {
				f.flags = append(f.flags, len(f.topo.Links))
			}
		}
		if tl.Config, err = f.linkConfig(path, kv); err != nil {
			return err
		}
		f.topo.Links = append(f.topo.Links, tl)
	}
	return nil
}

// linkConfig is a link's configuration from its words: the plain ones,
// then the netem lines, then the qdisc; a word that a netem line sets
// too is refused.
func (f *topoFile) linkConfig(path string, kv map[string]*yaml.Node) (link.Config, error) {
	var c link.Config
	var err error
	if v := kv["delay"]; v != nil {
		if c.Delay, err = parseDuration("delay")(v.Value); err != nil {
			return c, f.errAt(path, v, "delay: %v", err)
		}
	}
	if v := kv["jitter"]; v != nil {
		if c.Jitter, err = parseDuration("jitter")(v.Value); err != nil {
			return c, f.errAt(path, v, "jitter: %v", err)
		}
	}
	if v := kv["rate"]; v != nil {
		if c.Rate, err = tc.ParseRate(v.Value); err != nil {
			return c, f.errAt(path, v, "rate: %v", err)
		}
	}
	if v := kv["queue"]; v != nil {
		q, err := tc.ParseQueue(v.Value)
		if err != nil {
			return c, f.errAt(path, v, "queue: %v", err)
		}
		c.Qdisc = link.Qdisc(q)
	}
	if v := kv["loss"]; v != nil {
		p, err := ParsePercent("loss")(v.Value)
		if err != nil {
			return c, f.errAt(path, v, "%v", err)
		}
		c.Loss = link.RandomLoss(p, 0)
	}
	plain := map[tc.Option]string{tc.Delay: "delay", tc.Rate: "rate", tc.Limit: "queue", tc.Loss: "loss"}
	for _, w := range []struct {
		key  string
		side tc.Side
	}{{"netem", tc.Both}, {"netem-ab", tc.Up}, {"netem-ba", tc.Down}} {
		v := kv[w.key]
		if v == nil {
			continue
		}
		n, err := tc.ParseNetem(v.Value)
		if err != nil {
			return c, f.errAt(path, v, "%s: %s", w.key, strings.TrimPrefix(err.Error(), "netem: "))
		}
		for _, o := range n.Options() {
			if k, ok := plain[o]; ok && kv[k] != nil {
				return c, f.errAt(path, v, "%s and %s's %s both set the %s; give it once", k, w.key, o, o)
			}
		}
		c = n.Apply(c, w.side)
	}
	if v := kv["qdisc"]; v != nil {
		q, err := tc.ParseQdisc(v.Value)
		if err != nil {
			return c, f.errAt(path, v, "qdisc: %s", strings.TrimPrefix(err.Error(), "qdisc "))
		}
		if !q.IsFIFO() && kv["queue"] != nil {
			return c, f.errAt(path, v, "queue and qdisc %s both bound the queue; %s has its own limit (limit N): drop queue", v.Value, q.Kind)
		}
		c = q.Apply(c, tc.Both)
	}
	for _, w := range []struct {
		key string
		dir link.Dir
	}{{"trace-ab", link.AtoB}, {"trace-ba", link.BtoA}} {
		v := kv[w.key]
		if v == nil {
			continue
		}
		p := v.Value
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		t, err := link.ReadTrace(p)
		if err != nil {
			return c, f.errAt(path, v, "%s: %s", w.key, strings.TrimPrefix(err.Error(), "trace "))
		}
		c = c.WithTrace(w.dir, t)
	}
	return c, nil
}

// routes reads the routes.
func (f *topoFile) routes(path string, v *yaml.Node) error {
	if err := f.seq(path, "routes", v); err != nil {
		return err
	}
	for _, n := range v.Content {
		kv, err := f.fields(path, n, "at", "to", "via")
		if err != nil {
			return err
		}
		if kv["at"] == nil || kv["to"] == nil || kv["via"] == nil {
			return f.errAt(path, n, "a route needs at, to and via: {at: r1, to: s2, via: r2}")
		}
		f.topo.Routes = append(f.topo.Routes, topo.Route{At: kv["at"].Value, To: kv["to"].Value, Via: kv["via"].Value})
	}
	return nil
}

// readFlows reads the flows: each its hosts, its start, its workload and
// the workload's own flags.
func (f *topoFile) readFlows(path string, v *yaml.Node) error {
	if err := f.seq(path, "flows", v); err != nil {
		return err
	}
	if len(v.Content) == 0 {
		return f.errAt(path, v, "no flows; want at least one: {from: c1, to: s1, workload: bulk}")
	}
	for _, n := range v.Content {
		kv, err := f.fields(path, n)
		if err != nil {
			return err
		}
		for _, k := range []string{"from", "to", "workload"} {
			if kv[k] == nil {
				return f.errAt(path, n, "a flow needs from, to and workload: {from: c1, to: s1, workload: bulk}")
			}
		}
		kind, ok := workloads.Lookup(kv["workload"].Value)
		if !ok {
			return f.errAt(path, kv["workload"], "unknown workload %q; want %s", kv["workload"].Value, workloads.Names())
		}
		fs := flag.NewFlagSet(kind.Name, flag.ContinueOnError)
		build := kind.Flags(fs)
		var sf experiment.ShapeFlow
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			switch k.Value {
			case "from", "to", "workload":
			case "start":
				if sf.Start, err = parseDuration("start")(val.Value); err != nil {
					return f.errAt(path, val, "start: %v", err)
				}
			default:
				if fs.Lookup(k.Value) == nil {
					return f.errAt(path, k, "%s has no %s; a flow takes from, to, workload, start and the workload's flags (netemu help %s)", kind.Name, k.Value, kind.Name)
				}
				if err := fs.Set(k.Value, val.Value); err != nil {
					return f.errAt(path, val, "%s: %v", k.Value, err)
				}
			}
		}
		ws, err := build()
		if err != nil {
			return f.errAt(path, n, "%s: %v", kind.Name, err)
		}
		if len(ws) != 1 {
			return f.errAt(path, n, "%s gives %d variants here; a flow runs one: pick it with the workload's flags", kind.Name, len(ws))
		}
		sf.Workload = ws[0]
		f.flows = append(f.flows, topo.Flow{From: kv["from"].Value, To: kv["to"].Value})
		f.each = append(f.each, sf)
		f.nodes = append(f.nodes, n)
	}
	return nil
}

// shape is the file's network as a case's shape: the links it marks
// take the case's link, the others are as written.
func (f *topoFile) shape() *experiment.Shape {
	return &experiment.Shape{Name: f.name, Flows: f.each, Build: func(lc link.Config) (topo.Topology, []topo.Flow) {
		t := f.topo
		t.Links = slices.Clone(t.Links)
		for _, i := range f.flags {
			t.Links[i].Config = lc
		}
		return t, f.flows
	}}
}

// shapingFlags are the link flags a topology file's flags links take.
var shapingFlags = []string{"rtt", "rate", "queue", "qdisc", "qdisc-down", "delack", "trace-up", "trace-down", "trace-once", "loss", "jitter", "reorder", "duplicate", "corrupt", "netem", "netem-up", "netem-down"}

// unshaped refuses link flags given for a file with no link to take
// them.
func (f *topoFile) unshaped(given func(string) bool) error {
	if len(f.flags) > 0 {
		return nil
	}
	for _, name := range shapingFlags {
		if given(name) {
			return Usagef("--%s does not apply: no link of %s takes the command line's link flags; mark one with flags: true", name, f.name)
		}
	}
	return nil
}
