//go:build linux

package kernel

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// netemCases are netem lines: one per option netemu maps, then a few
// combined. b, when given, is direction B→A's own line (Config.BtoA);
// otherwise both sides get a.
var netemCases = []struct{ a, b string }{
	{"limit 50", ""},
	{"delay 25ms", ""},
	{"delay 25ms 5ms", ""},
	{"delay 25ms 5ms 25%", ""},
	{"delay 2s 100ms", ""},
	{"delay 1.5ms 300us distribution normal", ""},
	{"delay 10ms 2ms distribution pareto", ""},
	{"delay 10ms 2ms 10% distribution paretonormal", ""},
	{"loss 1%", ""},
	{"loss random 0.5% 25%", ""},
	{"loss state 1%", ""},
	{"loss state 1% 30% 2% 80% 0.5%", ""},
	{"loss gemodel 1%", ""},
	{"loss gemodel 1% 10% 70% 0.1%", ""},
	{"duplicate 1%", ""},
	{"duplicate 1% 25%", ""},
	{"corrupt 0.1%", ""},
	{"corrupt 0.1% 20%", ""},
	{"delay 10ms reorder 25%", ""},
	{"delay 10ms reorder 25% 50% gap 5", ""},
	{"rate 10mbit", ""},
	{"rate 2mbps", ""},
	{"rate 256kbit 20 100 -4", ""},
	{"rate 40gbit", ""},
	{"seed 42", ""},
	{"limit 2000 delay 25ms 5ms 25% distribution normal loss 1% 20% duplicate 0.5% 10% corrupt 0.1% reorder 10% 30% gap 3 rate 10mbit 14 seed 7", ""},
	{"delay 40ms 10ms loss gemodel 2% 20% 80% 0.5% corrupt 1% 5% rate 1gbit", ""},
	{"delay 20ms 5ms loss 1% seed 9", "delay 5ms rate 100mbit duplicate 2%"},
	{"rate 10mbit", "limit 300 rate 2mbit 14 48 5 loss state 2% 40%"},
	{"delay 30ms 3ms distribution pareto", "delay 30ms"},
}

// netemDeliberate lists where netemu's request differs from tc 6.1's for
// the same options on purpose, by attribute (a qopt field counts as one):
// why, and which form of the difference is that one. tc is run with
// "handle 1:", the handle netemu gives its qdisc; nlmsg_seq and nlmsg_pid
// are the sockets' and are not compared.
var netemDeliberate = []netemDifference{
	{"LATENCY64", "tc 6.1 sends the delay only as qopt.latency, psched ticks of whole microseconds; netemu also sends the nanoseconds, which the kernel prefers from 4.15 on (tc sends them from 6.9 on)",
		func(tc, ne map[string]string, s link.Config) bool {
			return !has(tc, "LATENCY64") && ne["LATENCY64.value"] == strconv.FormatInt(int64(s.Delay), 10)
		}},
	{"JITTER64", "as LATENCY64, for the jitter and qopt.jitter",
		func(tc, ne map[string]string, s link.Config) bool {
			return !has(tc, "JITTER64") && ne["JITTER64.value"] == strconv.FormatInt(int64(s.Jitter), 10)
		}},
	{"qopt.latency", "tc 6.9 on leaves qopt.latency 0 and sends LATENCY64 alone; netemu fills it as tc 6.1 does, for kernels before 4.15",
		func(tc, ne map[string]string, s link.Config) bool {
			return tc["qopt.latency"] == "0" && tc["LATENCY64.value"] == ne["LATENCY64.value"]
		}},
	{"qopt.jitter", "as qopt.latency, for the jitter",
		func(tc, ne map[string]string, s link.Config) bool {
			return tc["qopt.jitter"] == "0" && tc["JITTER64.value"] == ne["JITTER64.value"]
		}},
	{"PRNG_SEED", "tc 6.1 has no seed option (the tc line goes without it); netemu seeds every qdisc from the run's seed, the server's mixed with netemSeedBtoA, so that netem's decisions repeat with it",
		func(tc, ne map[string]string, s link.Config) bool {
			return !has(tc, "PRNG_SEED") && ne["PRNG_SEED.value"] == strconv.FormatUint(s.Seed, 10)
		}},
	{"CORR", "tc sends CORR whenever a correlation is given, reorder's and corrupt's too, which travel in REORDER and CORRUPT; an all-zero CORR is what the kernel assumes without one, and netemu sends none",
		func(tc, ne map[string]string, s link.Config) bool {
			return !has(ne, "CORR") && tc["CORR.delay_corr"] == "0" && tc["CORR.loss_corr"] == "0" && tc["CORR.dup_corr"] == "0"
		}},
	{"CORR", "tc 6.1 reads duplicate's correlation into CORR but sends CORR only when another correlation is given, so alone it never reaches the kernel; netemu sends it",
		func(tc, ne map[string]string, s link.Config) bool {
			return !has(tc, "CORR") && s.Duplicate.Corr > 0 && ne["CORR.delay_corr"] == "0" && ne["CORR.loss_corr"] == "0" &&
				ne["CORR.dup_corr"] == strconv.FormatUint(uint64(netemScaled(s.Duplicate.Corr)), 10)
		}},
}

// netemDifference is a difference in one attribute: why it is there, and
// accept, which tells it from others.
type netemDifference struct {
	attr, why string
	accept    func(tc, ne map[string]string, side link.Config) bool
}

// netemExtras are the attributes netemu sends beyond what netlink's Netem
// type covers; and RATE's overheads, which that type has no field for.
var netemExtras = []string{"LATENCY64", "JITTER64", "LOSS", "DELAY_DIST", "PRNG_SEED"}

const netemChildEnv = "NETEMU_NETEM_REQUEST"

// TestNetemRequestMatchesTC captures, under strace, what tc sends for each
// of netemCases and what netemu sends for the same options, each in a
// network namespace of its own, and compares them field by field.
// netemu's requests for every case come from one child process: a child
// per case, each the test binary under strace, took 40 s.
func TestNetemRequestMatchesTC(t *testing.T) {
	tc := needNetemTools(t)
	var mu sync.Mutex
	used := map[int]bool{} // netemDeliberate entries seen
	t.Cleanup(func() {
		for i, d := range netemDeliberate {
			if used[i] {
				t.Logf("deliberate: %s: %s", d.attr, d.why)
			}
		}
	})
	cfgs := make([]link.Config, len(netemCases))
	for i, c := range netemCases {
		cfgs[i] = netemCaseConfig(t, c.a, c.b)
	}
	job, err := json.Marshal(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	// For each case in turn the child sends netemu's request for A→B and
	// B→A, then netlink's QdiscAdd of the embedded Netem for both.
	all, out := straceSent(t, []string{netemChildEnv + "=" + string(job)}, os.Args[0], "-test.run=^TestNetemRequestChild$", "-test.count=1")
	if len(all) != 4*len(cfgs) {
		t.Fatalf("netemu sent %d RTM_NEWQDISC messages for %d cases; want 4 each\n%s", len(all), len(cfgs), out)
	}
	for k, c := range netemCases {
		name := c.a
		if c.b != "" {
			name += " | BtoA " + c.b
		}
		cfg, sent := cfgs[k], all[4*k:4*k+4]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for i, dir := range []link.Dir{link.AtoB, link.BtoA} {
				line := c.a
				if dir == link.BtoA && c.b != "" {
					line = c.b
				}
				tcLine := withoutSeed(line)
				msgs, out := straceSent(t, nil, tc, append([]string{"qdisc", "add", "dev", "lo", "root", "handle", "1:", "netem"}, strings.Fields(tcLine)...)...)
				if strings.Contains(out, "No distribution data") {
					t.Skipf("tc has no table for %q here: %s", tcLine, out)
				}
				if len(msgs) != 1 {
					t.Fatalf("tc netem %s sent %d RTM_NEWQDISC messages; want 1\n%s", tcLine, len(msgs), out)
				}
				want, err := netemFields(msgs[0])
				if err != nil {
					t.Fatalf("tc netem %s: %v", tcLine, err)
				}
				side := netemDirection(cfg, dir)
				got, err := netemFields(sent[i])
				if err != nil {
					t.Fatalf("netemu %v: %v", dir, err)
				}
				seen := compareWithTC(t, fmt.Sprintf("%v (tc netem %s)", dir, tcLine), want, got, side)
				mu.Lock()
				for _, i := range seen {
					used[i] = true
				}
				mu.Unlock()
				lib, err := netemFields(sent[2+i])
				if err != nil {
					t.Fatalf("netlink's QdiscAdd %v: %v", dir, err)
				}
				compareWithLibrary(t, dir.String(), lib, got)
			}
		})
	}
}

// TestNetemRequestChild is TestNetemRequestMatchesTC's child: it sends the
// requests for each link of $NETEMU_NETEM_REQUEST, in order, on lo of
// fresh namespaces. The kernel may refuse them; what was sent is what
// counts.
func TestNetemRequestChild(t *testing.T) {
	job := os.Getenv(netemChildEnv)
	if job == "" {
		t.Skip("runs only as the child of TestNetemRequestMatchesTC")
	}
	var cfgs []link.Config
	if err := json.Unmarshal([]byte(job), &cfgs); err != nil {
		t.Fatal(err)
	}
	for k, cfg := range cfgs {
		for _, library := range []bool{false, true} {
			for _, dir := range []link.Dir{link.AtoB, link.BtoA} {
				fmt.Printf("case %d, %v, netlink's QdiscAdd %v: %v\n", k, dir, library, sendNetem(cfg, dir, library))
			}
		}
	}
}

// sendNetem sends direction dir's netem qdisc for lo of a new namespace:
// as setupNetem does, or, with library, as netlink's QdiscAdd sends the
// embedded Netem.
func sendNetem(cfg link.Config, dir link.Dir, library bool) error {
	ns, err := newNamespace()
	if err != nil {
		return err
	}
	defer ns.close()
	h, err := handle(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	q := netemQdisc(lo.Attrs().Index, netemDirection(cfg, dir))
	if library {
		return h.QdiscAdd(&q.Netem)
	}
	return addNetem(ns, q)
}

// compareWithTC reports every attribute where netemu's fields (ne) differ
// from tc's unless netemDeliberate accepts the difference, and returns
// the netemDeliberate entries that did.
func compareWithTC(t *testing.T, what string, tc, ne map[string]string, side link.Config) []int {
	t.Helper()
	var same, deliberate []string
	var used []int
	for _, attr := range attrsOf(tc, ne) {
		diffs := fieldDiffs(attr, "tc", tc, ne)
		if len(diffs) == 0 {
			same = append(same, attr)
			continue
		}
		i := slices.IndexFunc(netemDeliberate, func(d netemDifference) bool {
			return d.attr == attr && d.accept(tc, ne, side)
		})
		if i < 0 {
			t.Errorf("%s: %s differs: %s", what, attr, strings.Join(diffs, "; "))
			continue
		}
		deliberate = append(deliberate, attr)
		used = append(used, i)
	}
	t.Logf("%s: equal: %s; deliberate: %s", what, strings.Join(same, ", "), strings.Join(deliberate, ", "))
	return used
}

// compareWithLibrary checks that netemu encodes what netlink's Netem type
// covers as netlink's QdiscAdd does, and adds only netemExtras.
func compareWithLibrary(t *testing.T, what string, lib, ne map[string]string) {
	t.Helper()
	for _, attr := range attrsOf(lib, ne) {
		diffs := fieldDiffs(attr, "netlink", lib, ne)
		switch {
		case len(diffs) == 0:
		case !has(lib, attr) && slices.Contains(netemExtras, attr):
		case attr == "RATE" && lib["RATE.rate"] == ne["RATE.rate"] && lib["RATE"] == ne["RATE"] &&
			lib["RATE.packet_overhead"] == "0" && lib["RATE.cell_size"] == "0" && lib["RATE.cell_overhead"] == "0":
		default:
			t.Errorf("%s: %s differs from netlink's QdiscAdd: %s", what, attr, strings.Join(diffs, "; "))
		}
	}
}

// attrsOf lists the attributes of the fields of a and b, sorted: an
// attribute is the part of a field's name before the first dot, and each
// qopt field is one of its own.
func attrsOf(a, b map[string]string) []string {
	var attrs []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if a := attrOf(k); !slices.Contains(attrs, a) {
				attrs = append(attrs, a)
			}
		}
	}
	slices.Sort(attrs)
	return attrs
}

func attrOf(field string) string {
	if strings.HasPrefix(field, "qopt.") {
		return field
	}
	a, _, _ := strings.Cut(field, ".")
	a, _, _ = strings.Cut(a, "/")
	return a
}

// fieldDiffs describes the fields of attr that differ between ref (named
// by refName) and netemu's ne.
func fieldDiffs(attr, refName string, ref, ne map[string]string) []string {
	var keys []string
	for _, m := range []map[string]string{ref, ne} {
		for k := range m {
			if attrOf(k) == attr && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	var diffs []string
	for _, k := range keys {
		a, aok := ref[k]
		b, bok := ne[k]
		if a == b && aok == bok {
			continue
		}
		if strings.HasSuffix(k, ".table") && aok && bok {
			x, y := strings.Fields(a), strings.Fields(b)
			i := 0
			for i < len(x) && i < len(y) && x[i] == y[i] {
				i++
			}
			diffs = append(diffs, fmt.Sprintf("%s: %d and %d entries, first difference at %d", k, len(x), len(y), i))
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s: %s %s, netemu %s", k, refName, shown(a, aok), shown(b, bok)))
	}
	return diffs
}

func shown(v string, ok bool) string {
	if !ok {
		return "absent"
	}
	return v
}

// has reports whether m has attribute attr.
func has(m map[string]string, attr string) bool {
	_, ok := m[attr]
	return ok
}

// netemFields decodes an RTM_NEWQDISC message into named fields: the
// header's (but nlmsg_len, nlmsg_seq and nlmsg_pid), tcmsg's, TCA_KIND,
// tc_netem_qopt's, and those of every attribute after it, nested ones
// recursively ("LOSS/GE.h"). An attribute is also a field of its own, its
// type and size ("CORR"). A field seen twice is an error.
func netemFields(b []byte) (map[string]string, error) {
	f := map[string]string{}
	var err error
	set := func(k, v string) {
		if _, dup := f[k]; dup && err == nil {
			err = fmt.Errorf("%s is there twice", k)
		}
		f[k] = v
	}
	ne := binary.NativeEndian
	if len(b) < unix.SizeofNlMsghdr+20 || int(ne.Uint32(b)) > len(b) {
		return nil, fmt.Errorf("a message of %d bytes is too short", len(b))
	}
	b = b[:ne.Uint32(b)]
	set("nlmsg_type", strconv.Itoa(int(ne.Uint16(b[4:]))))
	set("nlmsg_flags", fmt.Sprintf("%#x", ne.Uint16(b[6:])))
	set("tcm_family", strconv.Itoa(int(b[16])))
	set("tcm_ifindex", strconv.Itoa(int(int32(ne.Uint32(b[20:])))))
	set("tcm_handle", fmt.Sprintf("%#x", ne.Uint32(b[24:])))
	set("tcm_parent", fmt.Sprintf("%#x", ne.Uint32(b[28:])))
	set("tcm_info", strconv.Itoa(int(ne.Uint32(b[32:]))))
	attrs, perr := rtattrs(b[36:])
	if perr != nil {
		return nil, perr
	}
	for _, a := range attrs {
		switch a.typ {
		case unix.TCA_KIND:
			set("TCA_KIND", string(bytes.TrimRight(a.data, "\x00")))
		case unix.TCA_OPTIONS:
			if len(a.data) < 24 {
				return nil, fmt.Errorf("TCA_OPTIONS of %d bytes has no tc_netem_qopt", len(a.data))
			}
			for i, name := range []string{"latency", "limit", "loss", "gap", "duplicate", "jitter"} {
				set("qopt."+name, strconv.FormatUint(uint64(ne.Uint32(a.data[4*i:])), 10))
			}
			opts, perr := rtattrs(a.data[24:])
			if perr != nil {
				return nil, fmt.Errorf("TCA_OPTIONS: %w", perr)
			}
			for _, o := range opts {
				if perr := netemAttrFields("", o, set); perr != nil {
					return nil, perr
				}
			}
		default:
			set(fmt.Sprintf("TCA_%d", a.typ), fmt.Sprintf("%x", a.data))
		}
	}
	return f, err
}

// netemLayouts are the C structs of netem's attributes, field by field:
// u and s are __u32 and __s32, U and S __u64 and __s64; a nil layout is
// nested attributes, a "table" one an array of __s16.
var netemLayouts = map[string]map[uint16]struct {
	name   string
	fields []string // name:kind
}{
	"": {
		1:  {"CORR", []string{"delay_corr:u", "loss_corr:u", "dup_corr:u"}},
		2:  {"DELAY_DIST", []string{"table"}},
		3:  {"REORDER", []string{"probability:u", "correlation:u"}},
		4:  {"CORRUPT", []string{"probability:u", "correlation:u"}},
		5:  {"LOSS", nil},
		6:  {"RATE", []string{"rate:u", "packet_overhead:s", "cell_size:u", "cell_overhead:s"}},
		7:  {"ECN", []string{"value:u"}},
		8:  {"RATE64", []string{"value:U"}},
		10: {"LATENCY64", []string{"value:S"}},
		11: {"JITTER64", []string{"value:S"}},
		12: {"SLOT", []string{"min_delay:S", "max_delay:S", "max_packets:s", "max_bytes:s", "dist_delay:S", "dist_jitter:S"}},
		13: {"SLOT_DIST", []string{"table"}},
		14: {"PRNG_SEED", []string{"value:U"}},
	},
	"LOSS": {
		1: {"GI", []string{"p13:u", "p31:u", "p32:u", "p14:u", "p23:u"}},
		2: {"GE", []string{"p:u", "r:u", "h:u", "k1:u"}},
	},
}

// netemAttrFields sets the fields of netem attribute a, inside parent
// ("" or "LOSS").
func netemAttrFields(parent string, a rtattr, set func(k, v string)) error {
	ne := binary.NativeEndian
	l, ok := netemLayouts[parent][a.typ&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER)]
	name := l.name
	if !ok {
		name = fmt.Sprintf("attr%d", a.typ)
	}
	if parent != "" {
		name = parent + "/" + name
	}
	set(name, fmt.Sprintf("type %#x, %d bytes", a.typ, len(a.data)))
	switch {
	case !ok:
		set(name+".data", fmt.Sprintf("%x", a.data))
	case l.fields == nil:
		nested, err := rtattrs(a.data)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, n := range nested {
			if err := netemAttrFields(l.name, n, set); err != nil {
				return err
			}
		}
	case l.fields[0] == "table":
		if len(a.data)%2 != 0 {
			return fmt.Errorf("%s has %d bytes, not a table of __s16", name, len(a.data))
		}
		v := make([]string, len(a.data)/2)
		for i := range v {
			v[i] = strconv.Itoa(int(int16(ne.Uint16(a.data[2*i:]))))
		}
		set(name+".table", strings.Join(v, " "))
	default:
		d := a.data
		for _, nk := range l.fields {
			n, kind, _ := strings.Cut(nk, ":")
			size := 4
			if kind == "U" || kind == "S" {
				size = 8
			}
			if len(d) < size {
				return fmt.Errorf("%s has %d bytes, too few for its struct", name, len(a.data))
			}
			var v string
			switch kind {
			case "u":
				v = strconv.FormatUint(uint64(ne.Uint32(d)), 10)
			case "s":
				v = strconv.Itoa(int(int32(ne.Uint32(d))))
			case "U":
				v = strconv.FormatUint(ne.Uint64(d), 10)
			case "S":
				v = strconv.FormatInt(int64(ne.Uint64(d)), 10)
			}
			set(name+"."+n, v)
			d = d[size:]
		}
		if len(d) != 0 {
			return fmt.Errorf("%s has %d bytes, more than its struct", name, len(a.data))
		}
	}
	return nil
}

type rtattr struct {
	typ  uint16
	data []byte
}

// rtattrs splits b into netlink attributes.
func rtattrs(b []byte) ([]rtattr, error) {
	var attrs []rtattr
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("%d bytes left after the attributes", len(b))
		}
		n := int(binary.NativeEndian.Uint16(b))
		if n < 4 || n > len(b) {
			return nil, fmt.Errorf("an attribute of %d bytes in %d", n, len(b))
		}
		attrs = append(attrs, rtattr{binary.NativeEndian.Uint16(b[2:]), b[4:n]})
		b = b[min((n+3)&^3, len(b)):]
	}
	return attrs, nil
}

// straceSent runs name with args under strace, in a network namespace of
// its own that goes when it exits, and returns the RTM_NEWQDISC messages
// it sent, in order, and what it and strace printed.
func straceSent(t *testing.T, env []string, name string, args ...string) ([][]byte, string) {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "strace")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "strace", append([]string{"-f", "-qq", "-o", trace,
		"-e", "trace=sendmsg,sendto", "-e", "write=all", "-x", "-s", "65535", name}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	out, runErr := cmd.CombinedOutput() // tc fails where the kernel has no sch_netem
	text, err := os.ReadFile(trace)
	if err != nil {
		t.Fatalf("strace %s: %v (%v)\n%s", name, err, runErr, out)
	}
	bufs, err := straceBuffers(text)
	if err != nil {
		t.Fatalf("strace %s: %v", name, err)
	}
	if len(bufs) == 0 && bytes.Contains(out, []byte("ptrace")) {
		t.Skipf("strace cannot trace here: %s", out)
	}
	var msgs [][]byte
	for _, b := range bufs {
		for len(b) >= unix.SizeofNlMsghdr {
			n := int(binary.NativeEndian.Uint32(b))
			if n < unix.SizeofNlMsghdr || n > len(b) {
				break
			}
			if binary.NativeEndian.Uint16(b[4:]) == unix.RTM_NEWQDISC {
				msgs = append(msgs, b[:n])
			}
			b = b[min((n+3)&^3, len(b)):]
		}
	}
	return msgs, string(out)
}

// straceDumpLine is a line of strace's hex dump: its offset, then 16
// bytes in 48 columns.
var straceDumpLine = regexp.MustCompile(`\| ([0-9a-f]{5})  (.{1,48})`)

// straceBuffers reads the buffers of strace's hex dumps (-e write=all):
// one begins at each offset 0.
func straceBuffers(text []byte) ([][]byte, error) {
	var bufs [][]byte
	for _, line := range strings.Split(string(text), "\n") {
		m := straceDumpLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		off, _ := strconv.ParseUint(m[1], 16, 32)
		if off == 0 {
			bufs = append(bufs, nil)
		}
		if len(bufs) == 0 || int(off) != len(bufs[len(bufs)-1]) {
			return nil, fmt.Errorf("hex dump line at offset %#x out of place: %q", off, line)
		}
		for _, h := range strings.Fields(m[2]) {
			v, err := strconv.ParseUint(h, 16, 8)
			if err != nil || len(h) != 2 {
				return nil, fmt.Errorf("hex dump line %q: %q is not a byte", line, h)
			}
			bufs[len(bufs)-1] = append(bufs[len(bufs)-1], byte(v))
		}
	}
	return bufs, nil
}

// needNetemTools skips without root, tc or strace, and returns tc's path.
func needNetemTools(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("comparing netem requests with tc's needs root: both add a qdisc in a scratch network namespace")
	}
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skipf("comparing netem requests with tc's needs strace: %v", err)
	}
	if tc, err := exec.LookPath("tc"); err == nil {
		return tc
	}
	for _, tc := range []string{"/usr/sbin/tc", "/sbin/tc"} {
		if _, err := os.Stat(tc); err == nil {
			return tc
		}
	}
	t.Skip("comparing netem requests with tc's needs tc (iproute2)")
	return ""
}

// netemCaseConfig is the link of a case: a for A→B, and b, if given, as
// BtoA.
func netemCaseConfig(t *testing.T, a, b string) link.Config {
	t.Helper()
	n, err := tc.ParseNetem(a)
	if err != nil {
		t.Fatal(err)
	}
	cfg := n.Config()
	if b != "" {
		nb, err := tc.ParseNetem(b)
		if err != nil {
			t.Fatal(err)
		}
		cfg = cfg.WithBtoA(nb.Config())
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// withoutSeed drops "seed N" from a netem line: tc 6.1 does not know it.
func withoutSeed(line string) string {
	w := strings.Fields(line)
	if i := slices.Index(w, "seed"); i >= 0 && i+1 < len(w) {
		w = slices.Delete(w, i, i+2)
	}
	return strings.Join(w, " ")
}

func TestNetemSpec(t *testing.T) {
	cfg := netemCaseConfig(t, "limit 200 delay 25ms 5ms 25% distribution normal loss gemodel 1% 10% 70% 0.1% duplicate 1% 25% reorder 5% gap 4 rate 40gbit 14 53 -4 seed 7",
		"delay 3ms loss state 2% 40% corrupt 0.5% rate 8mbit")
	a, err := netemFields(netemQdisc(1, netemDirection(cfg, link.AtoB)).request().Serialize())
	if err != nil {
		t.Fatal(err)
	}
	b, err := netemFields(netemQdisc(1, netemDirection(cfg, link.BtoA)).request().Serialize())
	if err != nil {
		t.Fatal(err)
	}
	scaled := func(p float64) string { return strconv.FormatUint(uint64(netemScaled(p)), 10) }
	ticks := func(us int) string { return strconv.FormatUint(uint64(uint32(float64(us)*netlink.TickInUsec())), 10) }
	normal := link.Normal.Table()
	table := make([]string, len(normal))
	for i, v := range normal {
		table[i] = strconv.Itoa(int(v))
	}
	sides := map[string]map[string]string{"A→B": a, "B→A": b}
	for _, c := range []struct {
		side, field, want string
	}{
		{"A→B", "nlmsg_type", strconv.Itoa(unix.RTM_NEWQDISC)},
		{"A→B", "tcm_handle", "0x10000"},
		{"A→B", "tcm_parent", "0xffffffff"},
		{"A→B", "TCA_KIND", "netem"},
		{"A→B", "qopt.limit", "200"},
		{"A→B", "qopt.latency", ticks(25000)},
		{"A→B", "qopt.jitter", ticks(5000)},
		{"A→B", "qopt.gap", "4"},
		{"A→B", "qopt.duplicate", scaled(0.01)},
		{"A→B", "LATENCY64.value", "25000000"},
		{"A→B", "JITTER64.value", "5000000"},
		{"A→B", "CORR.delay_corr", scaled(0.25)},
		{"A→B", "CORR.dup_corr", scaled(0.25)},
		{"A→B", "REORDER.probability", scaled(0.05)},
		{"A→B", "LOSS", "type 0x8005, 20 bytes"},
		{"A→B", "LOSS/GE.p", scaled(0.01)},
		{"A→B", "LOSS/GE.r", scaled(0.10)},
		{"A→B", "LOSS/GE.h", strconv.FormatUint(math.MaxUint32-uint64(netemScaled(0.7)), 10)},
		{"A→B", "LOSS/GE.k1", scaled(0.001)},
		{"A→B", "RATE64.value", "5000000000"},
		{"A→B", "RATE.rate", "4294967295"},
		{"A→B", "RATE.packet_overhead", "14"},
		{"A→B", "RATE.cell_size", "53"},
		{"A→B", "RATE.cell_overhead", "-4"},
		{"A→B", "PRNG_SEED.value", "7"},
		{"A→B", "DELAY_DIST.table", strings.Join(table, " ")},
		{"B→A", "qopt.limit", "1000"},
		{"B→A", "qopt.latency", ticks(3000)},
		{"B→A", "qopt.gap", "0"},
		{"B→A", "LATENCY64.value", "3000000"},
		{"B→A", "LOSS/GI.p13", scaled(0.02)},
		{"B→A", "LOSS/GI.p31", scaled(0.40)},
		{"B→A", "LOSS/GI.p23", scaled(1)},
		{"B→A", "CORRUPT.probability", scaled(0.005)},
		{"B→A", "RATE.rate", "1000000"},
		{"B→A", "PRNG_SEED.value", strconv.FormatUint(7^netemSeedBtoA, 10)},
	} {
		if got, ok := sides[c.side][c.field]; got != c.want {
			if len(got) > 80 {
				got = got[:80] + "…"
			}
			t.Errorf("%s %s = %s (present %v); want %.80s", c.side, c.field, got, ok, c.want)
		}
	}
	for _, field := range []string{"RATE64", "DELAY_DIST", "JITTER64", "CORR", "REORDER"} {
		if has(b, field) {
			t.Errorf("B→A has %s; want none", field)
		}
	}
	if has(a, "CORRUPT") {
		t.Errorf("A→B has CORRUPT; want none")
	}
}

func TestNetemDirection(t *testing.T) {
	b := link.Config{Delay: 5 * time.Millisecond, Rate: 1e6}
	c := link.Config{Delay: 20 * time.Millisecond, MTU: 9000, Seed: 3, Outages: []link.Outage{{Start: time.Second, End: 2 * time.Second}}, BtoA: &b}
	ab, ba := netemDirection(c, link.AtoB), netemDirection(c, link.BtoA)
	if ab.Delay != c.Delay || ab.Seed != 3 || ab.BtoA != nil {
		t.Errorf("A→B: %+v", ab)
	}
	if ba.Delay != b.Delay || ba.Rate != b.Rate || ba.MTU != 9000 || len(ba.Outages) != 1 || ba.Seed == 3 || ba.BtoA != nil {
		t.Errorf("B→A: %+v; want BtoA's delay and rate, the link's MTU and outages, a seed of its own", ba)
	}
	c.BtoA = nil
	if ba := netemDirection(c, link.BtoA); ba.Delay != c.Delay || ba.Seed != 3^netemSeedBtoA {
		t.Errorf("B→A without BtoA: %+v; want A→B's parameters and the mixed seed", ba)
	}
}

func TestNetemUnmappable(t *testing.T) {
	for _, c := range []struct {
		cfg  link.Config
		want []string // options named; none: mappable
	}{
		{link.Config{Delay: time.Millisecond, Jitter: time.Millisecond, Rate: 1e6, KeepOrder: true, Loss: link.GELoss(0.01)}, nil},
		{link.Config{KeepOrder: true}, nil},
		{link.Config{Qdisc: link.Qdisc{LimitBytes: 3000}}, []string{"Qdisc.LimitBytes"}},
		{link.Config{Qdisc: link.Qdisc{Kind: link.FQCoDel}}, []string{"Qdisc"}},
		{link.Config{BtoA: &link.Config{Qdisc: link.Qdisc{Kind: link.CoDel}}}, []string{"BtoA.Qdisc"}},
		{link.Config{Outages: []link.Outage{{Start: 0, End: time.Second}}}, []string{"Outages"}},
		{link.Config{Noise: link.Noise{Base: time.Millisecond}}, []string{"Noise"}},
		{link.Config{Jitter: time.Millisecond, KeepOrder: true}, []string{"KeepOrder"}},
		{link.Config{BtoA: &link.Config{Qdisc: link.Qdisc{LimitBytes: 3000}, Jitter: time.Millisecond, KeepOrder: true}}, []string{"BtoA.Qdisc.LimitBytes", "BtoA.KeepOrder"}},
		{link.Config{Qdisc: link.Qdisc{LimitBytes: 3000}, Outages: []link.Outage{{Start: 0, End: time.Second}}, BtoA: &link.Config{Qdisc: link.Qdisc{LimitBytes: 4000}}}, []string{"Outages", "Qdisc.LimitBytes", "BtoA.Qdisc.LimitBytes"}},
	} {
		err := netemUnmappable(c.cfg)
		if c.want == nil {
			if err != nil {
				t.Errorf("%+v: %v; want it mappable", c.cfg, err)
			}
			continue
		}
		if !errors.Is(err, ErrUnsupported) || strings.Contains(fmt.Sprint(err), "\n") || !strings.Contains(fmt.Sprint(err), "--link tun") {
			t.Errorf("%+v: %v; want one line wrapping ErrUnsupported that points to --link tun", c.cfg, err)
			continue
		}
		for _, opt := range c.want {
			if !strings.Contains(err.Error(), " "+opt+" ") {
				t.Errorf("%+v: %v; want it to name %s", c.cfg, err, opt)
			}
		}
	}
}

func TestNetemLinkVia(t *testing.T) {
	yes := func() (bool, error) { return true, nil }
	no := func() (bool, error) { return false, errors.New("add netem qdisc: no such file or directory") }
	fits := link.Config{Delay: time.Millisecond, Loss: link.RandomLoss(0.01, 0)}
	bytesQueue := link.Config{Qdisc: link.Qdisc{LimitBytes: 3000}}
	for _, c := range []struct {
		via       Via
		cfg       link.Config
		available func() (bool, error)
		want      Via
		err       string
	}{
		{Auto, fits, yes, Netem, ""},
		{"", fits, yes, Netem, ""},
		{Auto, fits, no, TUN, ""},
		{Auto, bytesQueue, yes, TUN, ""},
		{Auto, link.Config{Rate: 1e6, Qdisc: link.Qdisc{Kind: link.FQCoDel}}, yes, TUN, ""}, // netemu's own fq_codel, through TUN
		{Netem, link.Config{Rate: 1e6, Qdisc: link.Qdisc{Kind: link.CoDel}}, yes, "", "Qdisc codel"},
		{TUN, bytesQueue, yes, TUN, ""},
		{Netem, fits, yes, Netem, ""},
		{Netem, fits, no, "", "sch_netem"},
		{Netem, bytesQueue, yes, "", "Qdisc.LimitBytes"},
		{Netem, bytesQueue, no, "", "Qdisc.LimitBytes"},
		{Auto, link.Config{Delay: time.Millisecond, Noise: link.Noise{Base: time.Millisecond}}, yes, TUN, ""}, // a node's time is netemu's link's
		{Netem, link.Config{Noise: link.Noise{Base: time.Millisecond}}, yes, "", "Noise"},
	} {
		got, err := linkVia(c.via, c.cfg, c.available)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("linkVia(%q, %+v) = %q, %v; want %q", c.via, c.cfg, got, err, c.want)
		case c.err != "" && (!errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "--link tun")):
			t.Errorf("linkVia(%q, %+v) = %q, %v; want an error naming %s and --link tun", c.via, c.cfg, got, err, c.err)
		}
	}
}

// On a kernel without sch_netem, --link netem says so in one line, with
// options netem would take.
func TestNetemMissingIsOneLine(t *testing.T) {
	needRoot(t)
	if ok, _ := netemAvailable(); ok {
		t.Skip("this kernel has sch_netem")
	}
	cfg := netemCaseConfig(t, "delay 10ms 2ms distribution normal loss gemodel 1% rate 10mbit seed 3", "delay 5ms")
	_, err := New(Config{Via: Netem, Link: cfg})
	if !errors.Is(err, ErrUnsupported) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "sch_netem") || !strings.Contains(err.Error(), "--link tun") {
		t.Errorf("New(netem) = %v; want one line wrapping ErrUnsupported, naming sch_netem and --link tun", err)
	}
}
