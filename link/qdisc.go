package link

import (
	"fmt"
	"reflect"
	"strings"
)

// The queue discipline stage: what holds packets in front of the
// serializer, and which one goes next when the serializer is free.
//
// A discipline owns its parameters. Its file implements the discipline
// interface (queue.go), defines the type of its parameters besides its
// limits (a QdiscParams: their defaults and their checks), lists tc's
// words for them (QdiscOption), and registers all that from init
// (registerQdisc); one line below names its kind. package link/tc reads
// and writes every registered discipline from its options, so a
// discipline whose options take a whole number, a size, a time or a
// switch needs nothing there; headdrop.go is the smallest example,
// codel.go one with parameters.

// QdiscKind names a queue discipline.
type QdiscKind uint8

// The queue disciplines. Each is registered by the file that implements
// it.
const (
	// FIFO is the drop-tail queue, tc's pfifo and bfifo in one, bounded
	// by Qdisc.Limit packets and Qdisc.LimitBytes bytes (fifo.go): the
	// zero value.
	FIFO QdiscKind = iota
	// CoDel is RFC 8289's controlled delay, as Linux's sch_codel
	// (codel.go).
	CoDel
	// FQCoDel is RFC 8290's flow queueing with CoDel per flow, as
	// Linux's sch_fq_codel (fqcodel.go).
	FQCoDel
	// PFIFOHeadDrop is tc's pfifo_head_drop: a FIFO that, full, drops its
	// oldest packet to take the new one (headdrop.go).
	PFIFOHeadDrop
	numQdiscKinds
)

// qdiscKind is what the link knows of a discipline: registered once per
// kind by the discipline's file.
type qdiscKind struct {
	name string
	// limit is the default Limit, in packets.
	limit int
	// params is the zero value of the discipline's QdiscParams type; nil
	// when it has no parameters besides its limits.
	params QdiscParams
	// options are every parameter the discipline reads, its limits
	// included, in the order tc writes them.
	options []QdiscOption
	// ahead: enqueue passes every packet it accepts straight to the
	// serializer (the discipline fixes each packet's turn and fate when
	// it arrives), so the link needs no timer to serve it.
	ahead bool
	new   func(l *Link, d *direction, q Qdisc) discipline
}

var qdiscKinds [numQdiscKinds]qdiscKind

// registerQdisc records kind k; each discipline's file calls it from init.
func registerQdisc(k QdiscKind, info qdiscKind) { qdiscKinds[k] = info }

// Count is the number of queue disciplines: they are 0 to Count()-1.
func (QdiscKind) Count() QdiscKind { return numQdiscKinds }

// String is the discipline's name in tc's grammar: fifo, codel, fq_codel,
// pfifo_head_drop.
func (k QdiscKind) String() string {
	if k < numQdiscKinds {
		return qdiscKinds[k].name
	}
	return "unknown"
}

// Options are the parameters kind k reads, its limits included, in tc's
// grammar and in the order tc writes them.
func (k QdiscKind) Options() []QdiscOption {
	if k < numQdiscKinds {
		return qdiscKinds[k].options
	}
	return nil
}

// Fields names the fields kind k reads, besides Kind, in the order its
// messages list them: Limit first, then the others in Options' order:
// "Limit", "Target", "ECN", ...
func (k QdiscKind) Fields() []string {
	var fields []string
	for _, o := range k.Options() {
		if o.Field == "Limit" {
			fields = append([]string{o.Field}, fields...)
		} else {
			fields = append(fields, o.Field)
		}
	}
	return fields
}

// reads reports whether kind k reads the field called name.
func (k QdiscKind) reads(name string) bool {
	for _, o := range k.Options() {
		if o.Field == name {
			return true
		}
	}
	return false
}

// Limits of every discipline: the FIFO's default (netem's), and the most
// packets any discipline holds.
const (
	DefaultQueuePackets = 1000 // netem's default limit
	MaxQdiscLimit       = 1 << 24
)

// Qdisc is the queue discipline of a direction. Its zero value is the
// drop-tail FIFO of 1000 packets. Zero fields mean the discipline's
// defaults; a discipline reads only its own fields (QdiscKind.Fields).
// package link/tc reads and writes it in tc's grammar.
type Qdisc struct {
	Kind QdiscKind

	// Limit bounds the packets in the discipline. For the FIFO it counts
	// the packets accepted and not yet fully serialized, the one on the
	// wire included, as netem's limit does, and a packet arriving at a
	// full FIFO is dropped (DropQueueFull); 0 means 1000, also when
	// LimitBytes is set. For the others it counts the packets waiting,
	// not the one being serialized: codel drops the arrival
	// (DropOverlimit), fq_codel its fattest flow's oldest, pfifo_head_drop
	// its own oldest; 0 means 1000 for codel and pfifo_head_drop, 10240
	// for fq_codel.
	Limit int

	// LimitBytes bounds the FIFO's packets by their total size, as tc's
	// bfifo does; at least the MTU. 0 means no byte bound. FIFO only.
	LimitBytes int

	// Params are the discipline's own parameters: CoDelParams for codel,
	// FQCoDelParams for fq_codel; the FIFO and pfifo_head_drop have
	// none. nil means the discipline's defaults, as its type's zero
	// value does.
	Params QdiscParams
}

// QdiscParams are a discipline's parameters besides its limits, a
// comparable struct defined in the discipline's file (CoDelParams,
// FQCoDelParams) whose zero fields mean the discipline's defaults.
type QdiscParams interface {
	// withDefaults fills in the zero fields; mtu is the link's.
	withDefaults(mtu int) QdiscParams
	// validate reports the first field out of range; f prefixes the
	// field names ("BtoA.Qdisc."), mtu is the link's.
	validate(f string, mtu int) error
}

// IsFIFO reports whether q is the drop-tail FIFO.
func (q Qdisc) IsFIFO() bool { return q.Kind == FIFO }

// withDefaults fills in the discipline's defaults; mtu is the link's.
func (q Qdisc) withDefaults(mtu int) Qdisc {
	if q.Kind >= numQdiscKinds {
		return q
	}
	k := qdiscKinds[q.Kind]
	if q.Limit == 0 {
		q.Limit = k.limit
	}
	if q.Params == nil {
		q.Params = k.params
	}
	if q.Params != nil {
		q.Params = q.Params.withDefaults(mtu)
	}
	return q
}

// validate reports the first field out of range, or set for a discipline
// that does not read it; where prefixes the field names ("BtoA."), mtu is
// the link's.
func (q Qdisc) validate(where string, mtu int) error {
	f := where + "Qdisc."
	if q.Kind >= numQdiscKinds {
		names := make([]string, numQdiscKinds)
		for k := range numQdiscKinds {
			names[k] = k.String()
		}
		return fmt.Errorf("link: %sKind is %d; want one of %s", f, q.Kind, strings.Join(names, ", "))
	}
	reads := strings.Join(q.Kind.Fields(), ", ")
	for _, s := range []struct {
		name string
		set  bool
	}{{"Limit", q.Limit != 0}, {"LimitBytes", q.LimitBytes != 0}} {
		if s.set && !q.Kind.reads(s.name) {
			return fmt.Errorf("link: %s%s is set, but %s has no such parameter; it reads %s", f, s.name, q.Kind, reads)
		}
	}
	if want := qdiscKinds[q.Kind].params; q.Params != nil && reflect.TypeOf(q.Params) != reflect.TypeOf(want) {
		takes := "none"
		if want != nil {
			takes = fmt.Sprintf("%T (nil means its defaults)", want)
		}
		return fmt.Errorf("link: %sParams is %T, but %s takes %s; it reads %s", f, q.Params, q.Kind, takes, reads)
	}
	switch {
	case q.Limit < 0 || q.Limit > MaxQdiscLimit:
		return fmt.Errorf("link: %sLimit is %d; want 1 to %d packets (0 means the default)", f, q.Limit, MaxQdiscLimit)
	case q.LimitBytes < 0:
		return fmt.Errorf("link: %sLimitBytes is %d; want at least one packet's size in bytes (0 means no byte limit)", f, q.LimitBytes)
	case q.LimitBytes > 0 && q.LimitBytes < mtu:
		return fmt.Errorf("link: %sLimitBytes is %d; want at least the MTU (%d bytes) so that a full-sized packet fits", f, q.LimitBytes, mtu)
	}
	if q.Params == nil {
		return nil
	}
	return q.Params.validate(f, mtu)
}

// A QdiscOption is one parameter of a discipline as tc's grammar names
// it, for package link/tc to read and write: its word, what follows the
// word, the values tc takes, and how to get and set it in a Qdisc. Each
// discipline registers its own (QdiscKind.Options).
type QdiscOption struct {
	// Word is tc's word for the option, a switch's word for on: "target",
	// "ecn".
	Word string
	// Off is a switch's word for off: "noecn".
	Off string
	// Field names what the option sets, in Qdisc or its Params, as
	// Validate's messages do: "Target".
	Field string
	// Value is what follows the word.
	Value OptionValue
	// Min and Max bound the values tc takes: whole numbers and sizes
	// from Min to Max, times more than 0 and at most Max nanoseconds.
	Min, Max int64
	// Unit is the unit tc's messages give a whole number's range, if
	// any: "bytes".
	Unit string
	// Why says why a time's Max is the most: "the longest CoDel's clock
	// compares".
	Why string
	// Example is a value tc takes, for messages: "5ms".
	Example string

	get func(Qdisc) int64
	set func(*Qdisc, int64)
}

// OptionValue is what follows an option's word in tc's grammar.
type OptionValue uint8

// The values an option takes.
const (
	// CountValue is a whole number, as tc's get_unsigned reads it: 1024,
	// 0x400.
	CountValue OptionValue = iota
	// SizeValue is a number of bytes, as tc's get_size reads it: 32Mb,
	// 512Kb, 1000000.
	SizeValue
	// TimeValue is a time with its unit, as tc's get_time reads it: 5ms,
	// 500us.
	TimeValue
	// SwitchValue is no value: the word turns the option on, its Off word
	// off (SwitchOn, SwitchOff).
	SwitchValue
)

// A switch's values through Get and Set; 0 is unset.
const (
	SwitchOff = 1
	SwitchOn  = 2
)

// Get returns the option's value in q, 0 when it is unset: a time in
// nanoseconds, a switch's SwitchOff or SwitchOn.
func (o QdiscOption) Get(q Qdisc) int64 { return o.get(q) }

// Set sets the option's value in q to v, a value Get would return.
func (o QdiscOption) Set(q *Qdisc, v int64) { o.set(q, v) }

// limitOption is Qdisc.Limit in tc's grammar: limit PACKETS. Every
// discipline that bounds its packets lists it among its options.
var limitOption = QdiscOption{Word: "limit", Field: "Limit", Value: CountValue, Min: 1, Max: MaxQdiscLimit, Example: "1000",
	get: func(q Qdisc) int64 { return int64(q.Limit) },
	set: func(q *Qdisc, v int64) { q.Limit = int(v) }}

// paramOption is o, a parameter held in params of type P, with its get
// and set: field points into a P. An unset Params reads as P's zero
// value, and a Set stores a P.
func paramOption[P QdiscParams, V ~int | ~int64 | ~uint8](o QdiscOption, field func(*P) *V) QdiscOption {
	o.get = func(q Qdisc) int64 {
		p, _ := q.Params.(P)
		return int64(*field(&p))
	}
	o.set = func(q *Qdisc, v int64) {
		p, _ := q.Params.(P)
		*field(&p) = V(v)
		q.Params = p
	}
	return o
}
