package link

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Trace is a time-varying link rate in mahimahi's format, the one
// mm-link(1), Pantheon's emulators and the public cellular trace sets
// use: each line is the millisecond, counted from the trace's start, of
// one delivery opportunity, and a millisecond written n times is n
// opportunities. The trace repeats when it ends (its period is its last
// millisecond), unless Once.
//
// Bytes are counted as mm-link counts them (src/frontend/link_queue.cc,
// LinkQueue::rationalize): an opportunity carries 1504 bytes of TUN
// frames, each an IP packet with the 4-byte header its TUN device adds
// (IFF_TUN without IFF_NO_PI), so a 1500-byte packet fills one and
// fourteen 100-byte packets share one, the fifteenth going on into the
// next; an opportunity's bytes that no queued packet uses are lost; a
// packet can use an opportunity only if it was queued before that
// millisecond (mm-link spends the opportunities due before it queues an
// arrival); a packet leaves at the millisecond of the opportunity that
// carries its last byte.
type Trace struct {
	ms   []uint32 // each opportunity's millisecond: nondecreasing, the last > 0
	Name string   // where it came from, for labels: a file's base name
	// Once delivers nothing after the trace's last opportunity, as
	// mm-link --once; packets queued then wait forever.
	Once bool
}

// TraceFrameBytes is what a delivery opportunity carries, and
// TraceFrameOverhead what each packet costs beyond its own bytes.
const (
	TraceFrameBytes    = 1504
	TraceFrameOverhead = 4
)

// MaxTraceLines bounds a trace: 10 million opportunities, 40 MB.
const MaxTraceLines = 10_000_000

// MaxTraceLength bounds a generated trace's length (a file's is bounded
// by its lines and its 32-bit milliseconds).
const MaxTraceLength = 24 * time.Hour

// A TraceError is a line of a trace file that is not one.
type TraceError struct {
	Name string // the file
	Line int    // from 1; 0 for the file as a whole
	Msg  string
}

func (e *TraceError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("trace %s: %s", e.Name, e.Msg)
	}
	return fmt.Sprintf("trace %s:%d: %s", e.Name, e.Line, e.Msg)
}

// ParseTrace reads a trace in mahimahi's format from r: one number per
// line, milliseconds, nondecreasing, the last greater than 0. A line
// that is not one (empty, not a number, smaller than the one before) is
// refused with its number, as is a trace with no line or longer than
// MaxTraceLines. Surrounding spaces and a final newline are allowed.
func ParseTrace(r io.Reader, name string) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64), 64)
	t := &Trace{Name: name}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			return nil, &TraceError{name, line, "an empty line; want one millisecond per line, like 12"}
		}
		v, ok := parseMillis(b)
		if !ok {
			return nil, &TraceError{name, line, fmt.Sprintf("%q is not a whole number of milliseconds", b)}
		}
		if n := len(t.ms); n > 0 && v < t.ms[n-1] {
			return nil, &TraceError{name, line, fmt.Sprintf("%d comes after %d: the milliseconds must not decrease", v, t.ms[n-1])}
		}
		if line > MaxTraceLines {
			return nil, &TraceError{name, line, fmt.Sprintf("more than %d opportunities", MaxTraceLines)}
		}
		if len(t.ms) == cap(t.ms) {
			// Double: a long trace then costs at most twice its 4 bytes
			// an opportunity while it is read (append grows by a quarter).
			t.ms = append(make([]uint32, 0, max(1024, 2*cap(t.ms))), t.ms...)
		}
		t.ms = append(t.ms, v)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &TraceError{name, line + 1, "a line too long to be a millisecond"}
		}
		return nil, &TraceError{name, 0, err.Error()}
	}
	if len(t.ms) == 0 {
		return nil, &TraceError{name, 0, "no opportunity: want one millisecond per line, like 1 (a 12 Mbit/s link)"}
	}
	if t.ms[len(t.ms)-1] == 0 {
		return nil, &TraceError{name, len(t.ms), "the trace lasts no time: its last millisecond must be greater than 0"}
	}
	t.ms = slices.Clip(t.ms)
	return t, nil
}

// parseMillis reads a line of a trace: decimal digits that fit in 32
// bits. It allocates nothing, so that a long trace costs its slice alone.
func parseMillis(b []byte) (uint32, bool) {
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v = v*10 + uint64(c-'0'); v > math.MaxUint32 {
			return 0, false
		}
	}
	return uint32(v), true
}

// ReadTrace reads the trace file at path (ParseTrace), named by its base
// name.
func ReadTrace(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	name := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		name = path[i+1:]
	}
	return ParseTrace(f, name)
}

// WriteTo writes the trace in mahimahi's format.
func (t *Trace) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	var n int64
	var buf [12]byte
	for _, ms := range t.ms {
		b := strconv.AppendUint(buf[:0], uint64(ms), 10)
		b = append(b, '\n')
		m, err := bw.Write(b)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

// Period is how long the trace lasts before it repeats: its last
// millisecond.
func (t *Trace) Period() time.Duration { return time.Duration(t.ms[len(t.ms)-1]) * time.Millisecond }

// Opportunities is the number of delivery opportunities in one period.
func (t *Trace) Opportunities() int { return len(t.ms) }

// MeanRate is the rate the trace offers over a period, in bits per
// second of 1500-byte packets: 12 Mbit/s for one opportunity a
// millisecond.
func (t *Trace) MeanRate() float64 {
	return float64(len(t.ms)) * 1500 * 8 / t.Period().Seconds()
}

// RateAt is the rate the trace offers in the window of the given width
// that ends at elapsed (on the trace's repeating schedule), in bits per
// second of 1500-byte packets: for timelines and plots.
func (t *Trace) RateAt(elapsed, window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	n := t.countUpTo(elapsed) - t.countUpTo(elapsed-window)
	return float64(n) * 1500 * 8 / window.Seconds()
}

// countUpTo counts the opportunities at or before d, over every
// repetition (Once: the first only). Repetition r's opportunity at
// millisecond m is at r·Period + m.
func (t *Trace) countUpTo(d time.Duration) int {
	if d < 0 {
		return 0
	}
	period := t.Period()
	reps := int(d / period)
	if t.Once && reps > 0 {
		return len(t.ms)
	}
	rest := d - time.Duration(reps)*period
	k, _ := slices.BinarySearchFunc(t.ms, rest, func(m uint32, r time.Duration) int {
		if time.Duration(m)*time.Millisecond <= r {
			return -1
		}
		return 1
	})
	return reps*len(t.ms) + k
}

// ConstantTrace is a trace of a fixed rate, in bits per second of
// 1500-byte packets, as short as the rate allows exactly within a
// second: 12 Mbit/s is the one line "1".
func ConstantTrace(rate float64) (*Trace, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("trace: rate %v; want more than 0", rate)
	}
	perMs := rate / 12e6 // opportunities a millisecond
	period := 1
	for ; period < 1000; period++ {
		if x := perMs * float64(period); math.Abs(x-math.Round(x)) < 1e-9 && math.Round(x) >= 1 {
			break
		}
	}
	return schedule([]traceSegment{{rate, time.Duration(period) * time.Millisecond}}, "constant")
}

// A traceSegment is a stretch of a generated trace at one rate (0: none).
type traceSegment struct {
	rate float64
	dur  time.Duration
}

// schedule lays the segments' opportunities out over milliseconds: the
// number at millisecond m is how many whole opportunities the rates
// offer up to m, less those before, so that the bytes offered never
// run ahead of the rates.
func schedule(segs []traceSegment, name string) (*Trace, error) {
	var length time.Duration
	for _, s := range segs {
		length += s.dur
	}
	if length > MaxTraceLength {
		return nil, fmt.Errorf("trace: %v long; want at most %v", length, MaxTraceLength)
	}
	t := &Trace{Name: name}
	var total time.Duration
	credit := 0.0 // opportunities offered so far, fractional
	given := 0
	for _, s := range segs {
		if s.rate < 0 || math.IsNaN(s.rate) || math.IsInf(s.rate, 0) {
			return nil, fmt.Errorf("trace: rate %v; want 0 or more", s.rate)
		}
		ms := int(s.dur / time.Millisecond)
		for i := 0; i < ms; i++ {
			total += time.Millisecond
			credit += s.rate / 12e6
			m := uint32(total / time.Millisecond)
			for ; float64(given+1) <= credit+1e-9; given++ {
				if len(t.ms) >= MaxTraceLines {
					return nil, fmt.Errorf("trace: more than %d opportunities; lower the rate or shorten the trace", MaxTraceLines)
				}
				t.ms = append(t.ms, m)
			}
		}
	}
	if total <= 0 {
		return nil, errors.New("trace: it lasts no time; want a duration of 1ms or more")
	}
	if len(t.ms) == 0 {
		return nil, errors.New("trace: no opportunity at these rates; want a rate of at least one 1500-byte packet over the trace")
	}
	if segs[len(segs)-1].rate == 0 {
		// A period ends at its last opportunity: a trace cannot end in a
		// gap. (At a rate above 0 it ends at its last opportunity, less
		// than one opportunity's time before the segments' end.)
		return nil, errors.New("trace: it would end without an opportunity, which mahimahi's format cannot say (its period ends at its last opportunity); end on a rate above 0")
	}
	return t, nil
}

// OnOffTrace alternates nothing for off and rate for on, starting off:
// a period ends at its last opportunity, so a trace cannot end in a gap.
func OnOffTrace(rate float64, on, off time.Duration) (*Trace, error) {
	if on < time.Millisecond || off < time.Millisecond {
		return nil, fmt.Errorf("trace: on %v, off %v; want 1ms or more each", on, off)
	}
	return schedule([]traceSegment{{0, off}, {rate, on}}, "onoff")
}

// StepsTrace holds each rate for step, in turn.
func StepsTrace(rates []float64, step time.Duration) (*Trace, error) {
	if len(rates) == 0 || step < time.Millisecond {
		return nil, fmt.Errorf("trace: %d rates of %v each; want at least one rate and a step of 1ms or more", len(rates), step)
	}
	segs := make([]traceSegment, len(rates))
	for i, r := range rates {
		segs[i] = traceSegment{r, step}
	}
	return schedule(segs, "steps")
}

// RandomWalkTrace moves the rate every step by a factor drawn uniformly
// (in log scale) from [1/(1+spread), 1+spread], kept between a quarter
// and four times where it started, for length; the walk is then scaled
// so that its mean over length is mean. The same seed gives the same
// trace.
func RandomWalkTrace(mean, spread float64, step, length time.Duration, seed uint64) (*Trace, error) {
	if length > MaxTraceLength || length/max(step, 1) > 1_000_000 {
		return nil, fmt.Errorf("trace: a random walk of %v in steps of %v; want at most %v and a million steps", length, step, MaxTraceLength)
	}
	if !(mean > 0) || !(spread >= 0) || step < time.Millisecond || length < step {
		return nil, fmt.Errorf("trace: random walk of mean %v, spread %v, step %v, length %v; want a mean above 0, a spread of 0 or more, a step of 1ms or more and a length of one step or more", mean, spread, step, length)
	}
	rnd := rand.New(rand.NewPCG(seed, 0x7ace))
	var segs []traceSegment
	r, sum := mean, 0.0
	for d := time.Duration(0); d < length; d += step {
		seg := traceSegment{r, min(step, length-d)}
		segs = append(segs, seg)
		sum += seg.rate * seg.dur.Seconds()
		lo, hi := math.Log(1/(1+spread)), math.Log(1+spread)
		r *= math.Exp(lo + (hi-lo)*rnd.Float64())
		r = min(max(r, mean/4), mean*4)
	}
	scale := mean * length.Seconds() / sum
	for i := range segs {
		segs[i].rate *= scale
	}
	return schedule(segs, fmt.Sprintf("walk-seed%d", seed))
}

// A traceLine is a link direction's position on its trace: the
// opportunity in use and the bytes left in it. Packets are placed on it
// in the order they are queued (depart).
type traceLine struct {
	t     *Trace
	next  int           // the next opportunity not yet used, an index into t.ms
	base  time.Duration // the start of the period next is in
	at    time.Duration // the last opportunity used (when left > 0)
	left  int           // its bytes no packet has used yet
	ended bool          // Once, and the last opportunity is used
}

// opportunity returns the time of opportunity next, without using it.
func (l *traceLine) opportunity() time.Duration {
	return l.base + time.Duration(l.t.ms[l.next])*time.Millisecond
}

// advance uses opportunity next.
func (l *traceLine) advance() {
	l.next++
	if l.next == len(l.t.ms) {
		l.next = 0
		l.base += l.t.Period()
		if l.t.Once {
			l.ended = true
		}
	}
}

// seek moves next to the first opportunity after arrival (strictly:
// one at arrival's millisecond was spent before the packet queued), if
// next is earlier.
func (l *traceLine) seek(arrival time.Duration) {
	if l.ended || l.opportunity() > arrival {
		return
	}
	period := l.t.Period()
	if gap := arrival - l.base; gap >= period && !l.t.Once {
		l.base += gap / period * period
		l.next = 0
	}
	rest := arrival - l.base
	k, _ := slices.BinarySearchFunc(l.t.ms, rest, func(m uint32, r time.Duration) int {
		if time.Duration(m)*time.Millisecond <= r {
			return -1
		}
		return 1
	})
	l.next = max(l.next, k)
	if l.next == len(l.t.ms) {
		l.next = 0
		l.base += period
		if l.t.Once {
			l.ended = true
		}
	}
}

// depart places a packet of size bytes, queued at arrival (the link's
// time), behind those placed before it, and returns when its last byte
// leaves: the time of the opportunity that carries it. waiting says the
// packet was queued before arrival, an instant at which the packet ahead
// of it left (a discipline that dequeues then): it may use what that
// opportunity has left. ok is false when no opportunity ever will (Once,
// after the trace's end).
func (l *traceLine) depart(arrival time.Duration, size int, waiting bool) (time.Duration, bool) {
	need := size + TraceFrameOverhead
	if l.left > 0 && (arrival < l.at || waiting && arrival == l.at) {
		// Queued before the opportunity the packet ahead finished in:
		// it goes on in that opportunity's leftover bytes.
		use := min(need, l.left)
		need -= use
		l.left -= use
		if need == 0 {
			return l.at, true
		}
	}
	l.left = 0
	l.seek(arrival)
	for need > 0 {
		if l.ended {
			return 0, false
		}
		l.at = l.opportunity()
		l.advance()
		use := min(need, TraceFrameBytes)
		need -= use
		l.left = TraceFrameBytes - use
	}
	return l.at, true
}

// A TraceCursor walks a trace's delivery opportunities in time order,
// over its repetitions (Once: the first alone), from the link's start.
type TraceCursor struct {
	t    *Trace
	i    int
	base time.Duration
	done bool
}

// Cursor returns a cursor at the trace's first opportunity.
func (t *Trace) Cursor() *TraceCursor { return &TraceCursor{t: t} }

// Peek returns the time of the opportunity at the cursor; ok is false
// past a one-shot trace's end.
func (c *TraceCursor) Peek() (at time.Duration, ok bool) {
	if c.done {
		return 0, false
	}
	return c.base + time.Duration(c.t.ms[c.i])*time.Millisecond, true
}

// Next moves the cursor to the next opportunity.
func (c *TraceCursor) Next() {
	if c.i++; c.i == len(c.t.ms) {
		c.i = 0
		c.base += c.t.Period()
		c.done = c.t.Once
	}
}
