package tc

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/netemu/netemu/internal/english"
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

// kindWords are the words of kind k's options, in the order its messages
// list them (link.QdiscKind.Fields), a switch's word for on then off.
func kindWords(k link.QdiscKind) []string {
	var words []string
	for _, f := range k.Fields() {
		o, _ := optionOf(k, f)
		words = append(words, o.Word)
		if o.Off != "" {
			words = append(words, o.Off)
		}
	}
	return words
}

// optionOf returns kind k's option that sets the field called field.
func optionOf(k link.QdiscKind, field string) (link.QdiscOption, bool) {
	for _, o := range k.Options() {
		if o.Field == field {
			return o, true
		}
	}
	return link.QdiscOption{}, false
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
// and any other discipline link registers, with the options it registers
// (link.QdiscKind.Options). Options may come in any order, each once.
// Times need a unit (5ms, 100ms, 500us), where tc reads a bare number as
// microseconds; whole numbers (limit, flows, quantum, drop_batch) may be
// written in C's 0x and 0 notations too; sizes (bfifo's limit,
// memory_limit) are written as tc writes them (32Mb, 4Mb, 512Kb, 1000000:
// k, m and g are binary, kbit, mbit and gbit eighths of them). fifo is
// netemu's drop-tail queue with the link's limits; pfifo and bfifo are
// the same queue with a limit of its own. ce_threshold is not supported
// and says so.
func ParseQdisc(s string) (Qdisc, error) {
	args := strings.Fields(s)
	if len(args) == 0 {
		return Qdisc{}, fmt.Errorf("qdisc %q is empty; want %s, like fq_codel or codel target 5ms interval 100ms", s, english.Or(qdiscNames()...))
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
		return Qdisc{}, fmt.Errorf("qdisc %q is not one netemu has; want %s, like fq_codel or codel target 5ms", args[0], english.Or(qdiscNames()...))
	}
	name := q.Kind.String()
	seen := map[string]bool{}
	for i := 1; i < len(args); i++ {
		word := args[i]
		o, ok := wordOf(q.Kind, word)
		if !ok {
			if word == "ce_threshold" || word == "ce_threshold_selector" {
				return Qdisc{}, fmt.Errorf("qdisc %s: %s is not supported; netemu's CoDel marks only in place of a drop (ecn)", name, word)
			}
			return Qdisc{}, fmt.Errorf("qdisc %s: %q is not one of its options; want %s", name, word, strings.Join(kindWords(q.Kind), ", "))
		}
		if seen[o.Word] {
			return Qdisc{}, fmt.Errorf("qdisc %s: %s is given twice; give each option once", name, o.Word)
		}
		seen[o.Word] = true
		var v int64
		switch {
		case o.Value == link.SwitchValue && word == o.Off:
			v = link.SwitchOff
		case o.Value == link.SwitchValue:
			v = link.SwitchOn
		case i+1 >= len(args):
			return Qdisc{}, fmt.Errorf("qdisc %s: %s needs a value, like %s", name, word, example(o))
		default:
			i++
			var err error
			if v, err = parseValue(name, o, args[i]); err != nil {
				return Qdisc{}, err
			}
		}
		o.Set((*link.Qdisc)(&q), v)
	}
	return q, nil
}

// wordOf returns kind k's option that word names: its word, or a
// switch's word for off.
func wordOf(k link.QdiscKind, word string) (link.QdiscOption, bool) {
	for _, o := range k.Options() {
		if o.Word == word || o.Off == word {
			return o, true
		}
	}
	return link.QdiscOption{}, false
}

// example is option o with a value, for messages: limit 1000.
func example(o link.QdiscOption) string { return o.Word + " " + o.Example }

// parseValue reads v, the value of option o of the qdisc called name.
func parseValue(name string, o link.QdiscOption, v string) (int64, error) {
	switch o.Value {
	case link.SizeValue:
		return qdiscBytes(name, o.Word, v, o.Min, o.Max, sizeBound(o.Max), example(o))
	case link.TimeValue:
		return qdiscTime(name, o, v)
	}
	return qdiscCount(name, o, v)
}

// parseFIFO reads pfifo [limit PACKETS] or bfifo [limit BYTES], the
// FIFO's options Limit and LimitBytes.
func parseFIFO(args []string) (Qdisc, error) {
	name, field := args[0], "Limit"
	if name == "bfifo" {
		field = "LimitBytes"
	}
	o, _ := optionOf(link.FIFO, field)
	like := name + " " + example(o)
	switch {
	case len(args) == 1:
		return Qdisc{}, nil
	case args[1] != "limit":
		return Qdisc{}, fmt.Errorf("qdisc %s: %q is not one of its options; want limit", name, args[1])
	case len(args) == 2:
		return Qdisc{}, fmt.Errorf("qdisc %s: limit needs a value, like %s", name, like)
	case len(args) > 3:
		return Qdisc{}, fmt.Errorf("qdisc %s: %q follows its limit; it takes limit only, like %s", name, strings.Join(args[3:], " "), like)
	}
	var v int64
	var err error
	if name == "pfifo" {
		v, err = qdiscCount(name, o, args[2])
	} else {
		hi := min(o.Max, maxInt) // an int holds it
		v, err = qdiscBytes(name, "limit", args[2], o.Min, hi, strconv.FormatInt(hi, 10)+" bytes", like)
	}
	if err != nil {
		return Qdisc{}, err
	}
	var q Qdisc
	o.Set((*link.Qdisc)(&q), v)
	return q, nil
}

// maxInt is the largest int: bfifo's limit is at most tc's 32 bits, or
// fewer where an int is smaller.
const maxInt = int64(^uint(0) >> 1)

// qdiscCount reads a whole number, option o's value, as tc's
// get_unsigned does.
func qdiscCount(name string, o link.QdiscOption, v string) (int64, error) {
	n, ok := cUint(v, 0)
	if !ok || strings.HasPrefix(v, "-") {
		return 0, fmt.Errorf("qdisc %s: %s %q is not a whole number; write it like %s", name, o.Word, v, example(o))
	}
	if n < uint64(o.Min) || n > uint64(o.Max) {
		unit := ""
		if o.Unit != "" {
			unit = " " + o.Unit
		}
		return 0, fmt.Errorf("qdisc %s: %s %q is out of range; want %d to %d%s, like %s", name, o.Word, v, o.Min, o.Max, unit, example(o))
	}
	return int64(n), nil
}

// qdiscBytes reads a size as tc's get_size does, from lo to hi bytes;
// hiText writes hi for messages.
func qdiscBytes(name, opt, v string, lo, hi int64, hiText, example string) (int64, error) {
	b, ok := tcSize(asciiLower(v))
	switch {
	case !ok || b != b:
		return 0, fmt.Errorf("qdisc %s: %s %q is not a size; write it like 32Mb, 512Kb or 1000000 (bytes)", name, opt, v)
	case b < float64(lo) || b > float64(hi):
		loText := "1 byte"
		if lo != 1 {
			loText = sizeBound(lo)
		}
		return 0, fmt.Errorf("qdisc %s: %s %q is out of range; want %s to %s, like %s", name, opt, v, loText, hiText, example)
	}
	return int64(b), nil
}

// sizeBound writes a size option's bound for messages: 2Gb, 32Mb, 1000.
func sizeBound(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return strconv.FormatInt(n>>30, 10) + "Gb"
	}
	return tcSizeString(int(n))
}

// qdiscTime reads a time, option o's value, as tc's get_time does, with
// a unit required, more than 0 and at most o.Max.
func qdiscTime(name string, o link.QdiscOption, v string) (int64, error) {
	p := &netemParser{args: []string{v}}
	d, err := p.time(o.Word, time.Duration(o.Max), o.Why)
	if err != nil {
		return 0, fmt.Errorf("qdisc %s: %s", name, strings.TrimPrefix(err.Error(), "netem: "))
	}
	if d <= 0 {
		return 0, fmt.Errorf("qdisc %s: %s %q would be no time at all; want more than 0, like %s", name, o.Word, v, example(o))
	}
	return int64(d), nil
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
// zero), in tc's own "qdisc show" order (the order of the discipline's
// options, link.QdiscKind.Options), so that ParseQdisc reads q back
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
	for _, o := range q.Kind.Options() {
		if v := o.Get(link.Qdisc(q)); v != 0 {
			w = append(w, formatOption(o, v)...)
		}
	}
	return strings.Join(w, " ")
}

// formatOption writes option o with its value v, not 0, as tc does.
func formatOption(o link.QdiscOption, v int64) []string {
	switch o.Value {
	case link.SwitchValue:
		switch v {
		case link.SwitchOn:
			return []string{o.Word}
		case link.SwitchOff:
			return []string{o.Off}
		}
		return nil
	case link.SizeValue:
		return []string{o.Word, tcSizeString(int(v))}
	case link.TimeValue:
		return []string{o.Word, netemTime(time.Duration(v))}
	}
	return []string{o.Word, strconv.FormatInt(v, 10)}
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
