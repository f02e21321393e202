package tc

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/netemu/netemu/link"
)

// Qdisc is a queue discipline in tc's grammar: a link.Qdisc that reads
// and writes itself as tc does, and applies to a side of a link.
type Qdisc link.Qdisc

// IsFIFO reports whether q is the drop-tail FIFO.
func (q Qdisc) IsFIFO() bool { return q.Kind == link.FIFO }

// Apply returns c with q as the discipline of side s's directions. A bare
// fifo (no limit of its own) names the kind only: a direction whose
// discipline is a FIFO keeps its limits.
func (q Qdisc) Apply(c link.Config, s Side) link.Config {
	return onSide(c, s, func(d link.Config) link.Config {
		if q.IsFIFO() && q.Limit == 0 && q.LimitBytes == 0 && d.Qdisc.IsFIFO() {
			return d
		}
		d.Qdisc = link.Qdisc(q)
		return d
	})
}

// qdiscNames are the names ParseQdisc takes: every kind's, and pfifo and
// bfifo, the FIFO bounded in packets or in bytes.
func qdiscNames() []string {
	names := []string{link.FIFO.String(), "pfifo", "bfifo"}
	for k := link.FIFO + 1; k < k.Count(); k++ {
		names = append(names, k.String())
	}
	return names
}

// orList writes a, b, c or d.
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// fieldOptions are tc's words for link.Qdisc's fields.
var fieldOptions = map[string][]string{
	"Limit": {"limit"}, "Target": {"target"}, "Interval": {"interval"}, "ECN": {"ecn", "noecn"}, "Flows": {"flows"},
	"Quantum": {"quantum"}, "MemoryLimit": {"memory_limit"}, "DropBatch": {"drop_batch"},
}

// kindOptions are the options of kind k, in tc's order.
func kindOptions(k link.QdiscKind) []string {
	var opts []string
	for _, f := range k.Fields() {
		opts = append(opts, fieldOptions[f]...)
	}
	return opts
}

var qdiscExample = map[string]string{
	"limit": "limit 1000", "flows": "flows 1024", "quantum": "quantum 1500", "drop_batch": "drop_batch 64",
	"target": "target 5ms", "interval": "interval 100ms", "memory_limit": "memory_limit 32Mb",
}

// ParseQdisc reads a queue discipline in tc's grammar, what follows
// "tc qdisc add dev X root":
//
//	fifo
//	pfifo [limit PACKETS]
//	bfifo [limit BYTES]
//	codel [limit PACKETS] [target TIME] [interval TIME] [ecn|noecn]
//	fq_codel [limit PACKETS] [flows NUMBER] [quantum BYTES] [target TIME]
//	         [interval TIME] [memory_limit BYTES] [ecn|noecn] [drop_batch SIZE]
//	pfifo_head_drop [limit PACKETS]
//
// and any other discipline link registers, with the options of the
// fields it reads. Options may come in any order, each once. Times need
// a unit (5ms, 100ms, 500us), where tc reads a bare number as
// microseconds; limit, flows, quantum and drop_batch are whole numbers
// (C's 0x and 0 notations too); bfifo's limit and memory_limit are sizes
// as tc writes them (32Mb, 4Mb, 512Kb, 1000000: k, m and g are binary,
// kbit, mbit and gbit eighths of them). fifo is netemu's drop-tail queue
// with the link's limits; pfifo and bfifo are the same queue with a limit
// of their own. ce_threshold is not supported and says so.
func ParseQdisc(s string) (Qdisc, error) {
	args := strings.Fields(s)
	if len(args) == 0 {
		return Qdisc{}, fmt.Errorf("qdisc %q is empty; want %s, like fq_codel or codel target 5ms interval 100ms", s, orList(qdiscNames()))
	}
	switch args[0] {
	case "fifo":
		if len(args) > 1 {
			return Qdisc{}, fmt.Errorf("qdisc fifo takes no options (got %q); its limit is the link's queue: for one of its own, write pfifo limit 1000 or bfifo limit 150000", strings.Join(args[1:], " "))
		}
		return Qdisc{}, nil
	case "pfifo", "bfifo":
		return parseFIFO(args)
	}
	q := Qdisc{Kind: link.FIFO.Count()}
	for k := link.FIFO + 1; k < k.Count(); k++ {
		if args[0] == k.String() {
			q.Kind = k
		}
	}
	if q.Kind == q.Kind.Count() {
		return Qdisc{}, fmt.Errorf("qdisc %q is not one netemu has; want %s, like fq_codel or codel target 5ms", args[0], orList(qdiscNames()))
	}
	opts := kindOptions(q.Kind)
	seen := map[string]bool{}
	for i := 1; i < len(args); i++ {
		word := args[i]
		opt := word
		if word == "noecn" {
			opt = "ecn"
		}
		if !contains(opts, opt) {
			if word == "ce_threshold" || word == "ce_threshold_selector" {
				return Qdisc{}, fmt.Errorf("qdisc %s: %s is not supported; netemu's CoDel marks only in place of a drop (ecn)", q.Kind, word)
			}
			return Qdisc{}, fmt.Errorf("qdisc %s: %q is not one of its options; want %s", q.Kind, word, strings.Join(opts, ", "))
		}
		if seen[opt] {
			return Qdisc{}, fmt.Errorf("qdisc %s: %s is given twice; give each option once", q.Kind, opt)
		}
		seen[opt] = true
		if opt == "ecn" {
			q.ECN = link.ECNOn
			if word == "noecn" {
				q.ECN = link.ECNOff
			}
			continue
		}
		if i+1 >= len(args) {
			return Qdisc{}, fmt.Errorf("qdisc %s: %s needs a value, like %s", q.Kind, word, qdiscExample[word])
		}
		i++
		if err := q.set(opt, args[i]); err != nil {
			return Qdisc{}, err
		}
	}
	return q, nil
}

// set reads option opt's value v into q.
func (q *Qdisc) set(opt, v string) error {
	var err error
	switch opt {
	case "limit":
		q.Limit, err = qdiscCount(q.Kind, opt, v, link.MaxQdiscLimit)
	case "flows":
		q.Flows, err = qdiscCount(q.Kind, opt, v, link.MaxFlows)
	case "quantum":
		q.Quantum, err = qdiscCount(q.Kind, opt, v, link.MaxQuantum)
		if err == nil && q.Quantum < link.MinQuantum || err != nil && strings.Contains(err.Error(), "out of range") {
			err = fmt.Errorf("qdisc %s: quantum %q is out of range; want %d to %d bytes, like quantum 1500", q.Kind, v, link.MinQuantum, link.MaxQuantum)
		}
	case "drop_batch":
		q.DropBatch, err = qdiscCount(q.Kind, opt, v, link.MaxQdiscLimit)
	case "target":
		q.Target, err = qdiscTime(q.Kind, opt, v)
	case "interval":
		q.Interval, err = qdiscTime(q.Kind, opt, v)
	case "memory_limit":
		q.MemoryLimit, err = qdiscBytes(q.Kind.String(), opt, v, link.MaxMemoryLimit, "2Gb", "memory_limit 32Mb")
	}
	return err
}

// parseFIFO reads pfifo [limit PACKETS] or bfifo [limit BYTES].
func parseFIFO(args []string) (Qdisc, error) {
	name := args[0]
	switch {
	case len(args) == 1:
		return Qdisc{}, nil
	case args[1] != "limit":
		return Qdisc{}, fmt.Errorf("qdisc %s: %q is not one of its options; want limit", name, args[1])
	case len(args) == 2:
		return Qdisc{}, fmt.Errorf("qdisc %s: limit needs a value, like %s", name, fifoExample[name])
	case len(args) > 3:
		return Qdisc{}, fmt.Errorf("qdisc %s: %q follows its limit; it takes limit only, like %s", name, strings.Join(args[3:], " "), fifoExample[name])
	}
	var q Qdisc
	var err error
	if name == "pfifo" {
		q.Limit, err = qdiscCount(link.FIFO, "limit", args[2], link.MaxQdiscLimit)
		if err != nil {
			err = fmt.Errorf("qdisc pfifo: %s", strings.TrimPrefix(err.Error(), "qdisc fifo: "))
		}
	} else {
		q.LimitBytes, err = qdiscBytes(name, "limit", args[2], maxFIFOBytes, strconv.Itoa(maxFIFOBytes)+" bytes", fifoExample[name])
	}
	return q, err
}

var fifoExample = map[string]string{"pfifo": "pfifo limit 1000", "bfifo": "bfifo limit 150000"}

// maxFIFOBytes is the largest byte limit bfifo takes: tc's 32 bits, or
// fewer where an int is smaller.
const maxFIFOBytes = min(1<<32-1, int(^uint(0)>>1))

func contains(list []string, s string) bool {
	for _, w := range list {
		if w == s {
			return true
		}
	}
	return false
}

// qdiscCount reads a whole number from 1 to max as tc's get_unsigned does.
func qdiscCount(k link.QdiscKind, opt, v string, max int) (int, error) {
	n, ok := cUint(v, 0)
	if !ok || strings.HasPrefix(v, "-") {
		return 0, fmt.Errorf("qdisc %s: %s %q is not a whole number; write it like %s", k, opt, v, qdiscExample[opt])
	}
	if n < 1 || n > uint64(max) {
		return 0, fmt.Errorf("qdisc %s: %s %q is out of range; want 1 to %d, like %s", k, opt, v, max, qdiscExample[opt])
	}
	return int(n), nil
}

// qdiscBytes reads a size as tc's get_size does, from 1 byte to max.
func qdiscBytes(name, opt, v string, max int, maxText, example string) (int, error) {
	b, ok := tcSize(asciiLower(v))
	switch {
	case !ok || b != b:
		return 0, fmt.Errorf("qdisc %s: %s %q is not a size; write it like 32Mb, 512Kb or 1000000 (bytes)", name, opt, v)
	case b < 1 || b > float64(max):
		return 0, fmt.Errorf("qdisc %s: %s %q is out of range; want 1 byte to %s, like %s", name, opt, v, maxText, example)
	}
	return int(b), nil
}

// qdiscTime reads a time as tc's get_time does, with a unit required,
// more than 0 and at most link.MaxCoDelTime.
func qdiscTime(k link.QdiscKind, opt, v string) (time.Duration, error) {
	p := &netemParser{args: []string{v}}
	d, err := p.time(opt, link.MaxCoDelTime, "the longest CoDel's clock compares")
	if err != nil {
		return 0, fmt.Errorf("qdisc %s: %s", k, strings.TrimPrefix(err.Error(), "netem: "))
	}
	if d <= 0 {
		return 0, fmt.Errorf("qdisc %s: %s %q would be no time at all; want more than 0, like %s", k, opt, v, qdiscExample[opt])
	}
	return d, nil
}

// tcSize reads a size as tc's get_size does: a number, with an optional
// unit (case already lowered): b; k, kb, m, mb, g, gb (binary); kbit,
// mbit, gbit (binary, in bits).
func tcSize(t string) (float64, bool) {
	if v, ok := cFloat(t); ok {
		return v, true
	}
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"kbit", 1024 / 8}, {"mbit", 1024 * 1024 / 8}, {"gbit", 1024 * 1024 * 1024 / 8},
		{"kb", 1024}, {"mb", 1024 * 1024}, {"gb", 1024 * 1024 * 1024}, {"k", 1024}, {"m", 1024 * 1024}, {"g", 1024 * 1024 * 1024}, {"b", 1}} {
		if num, cut := strings.CutSuffix(t, u.suffix); cut {
			if v, ok := cFloat(num); ok {
				return v * u.mult, true
			}
		}
	}
	return 0, false
}

// String writes q in tc's grammar, each option only when it is set (not
// zero), in tc's own "qdisc show" order, so that ParseQdisc reads q back
// exactly:
//
//	fifo
//	pfifo limit 50
//	bfifo limit 150000
//	codel target 5ms interval 100ms limit 1000 ecn
//	fq_codel flows 1024 quantum 1514 target 5ms interval 100ms limit 10240 memory_limit 32Mb ecn drop_batch 64
//
// A FIFO bounded both in bytes and in packets is written as its bfifo:
// the packet bound is netem's limit, which a netem line writes.
func (q Qdisc) String() string {
	if q.IsFIFO() {
		switch {
		case q.LimitBytes != 0:
			return "bfifo limit " + strconv.Itoa(q.LimitBytes)
		case q.Limit != 0:
			return "pfifo limit " + strconv.Itoa(q.Limit)
		}
		return "fifo"
	}
	w := []string{q.Kind.String()}
	add := func(s ...string) { w = append(w, s...) }
	if q.Flows != 0 {
		add("flows", strconv.Itoa(q.Flows))
	}
	if q.Quantum != 0 {
		add("quantum", strconv.Itoa(q.Quantum))
	}
	if q.Target != 0 {
		add("target", netemTime(q.Target))
	}
	if q.Interval != 0 {
		add("interval", netemTime(q.Interval))
	}
	if q.Limit != 0 {
		add("limit", strconv.Itoa(q.Limit))
	}
	if q.MemoryLimit != 0 {
		add("memory_limit", tcSizeString(q.MemoryLimit))
	}
	switch q.ECN {
	case link.ECNOn:
		add("ecn")
	case link.ECNOff:
		add("noecn")
	}
	if q.DropBatch != 0 {
		add("drop_batch", strconv.Itoa(q.DropBatch))
	}
	return strings.Join(w, " ")
}

// tcSizeString writes n bytes as tc prints sizes, exactly: 32Mb, 512Kb,
// or a bare byte count.
func tcSizeString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "Mb"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "Kb"
	}
	return strconv.Itoa(n)
}
