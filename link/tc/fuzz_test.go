package tc

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/netemu/netemu/link"
)

// Fuzz tests for the units. Their seed corpora live in testdata/fuzz/<name>/
// and run with every go test; explore with
//
//	go test -run XXX -fuzz FuzzParseRate -fuzztime 3m ./link/tc/

// FuzzParseRate: ParseRate never panics; what it accepts is a finite rate
// Config accepts, and FormatRate writes it back; what it rejects gets a
// message that quotes the input and shows the accepted form.
func FuzzParseRate(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			if r != 0 || !strings.Contains(err.Error(), strconv.Quote(s)) ||
				(!strings.Contains(err.Error(), "10mbit") && !strings.Contains(err.Error(), "8bit")) {
				t.Fatalf("ParseRate(%q) = %v, %q; want 0 and a message quoting the input and the accepted form", s, r, err)
			}
			return
		}
		if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 || (r > 0 && r < 8) {
			t.Fatalf("ParseRate(%q) accepted %v bit/s", s, r)
		}
		if err := (link.Config{Rate: r}).Validate(); err != nil {
			t.Fatalf("ParseRate(%q) = %v, which Config rejects: %v", s, r, err)
		}
		back, err := ParseRate(FormatRate(r))
		if err != nil || math.Abs(back-r) > 1e-9*r {
			t.Fatalf("ParseRate(FormatRate(%v)) = %v, %v; want %v", r, back, err, r)
		}
	})
}

// FuzzParseSize: ParseSize never panics and accepts only byte counts from
// 0 to 2^50; rejections quote the input.
func FuzzParseSize(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if n != 0 || !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("ParseSize(%q) = %d, %q; want 0 and a message quoting the input", s, n, err)
			}
			return
		}
		if n < 0 || n > 1<<50 {
			t.Fatalf("ParseSize(%q) accepted %d bytes", s, n)
		}
	})
}

// FuzzParseQueue: ParseQueue never panics and returns either packets (at
// least 1) or bytes (at least a minimal IP packet), never both.
func FuzzParseQueue(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQueue(s)
		p, b := q.Limit, q.LimitBytes
		if err != nil {
			if q != (Qdisc{}) || !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("ParseQueue(%q) = %d, %d, %q; want zeros and a message quoting the input", s, p, b, err)
			}
			return
		}
		if (p > 0) == (b > 0) || p < 0 || b < 0 || (b > 0 && b < 68) {
			t.Fatalf("ParseQueue(%q) = %d packets, %d bytes", s, p, b)
		}
		if err := (link.Config{Qdisc: link.Qdisc(q)}).Validate(); err != nil && q.LimitBytes >= link.DefaultMTU {
			t.Fatalf("ParseQueue(%q) = %d, %d, which Config rejects: %v", s, p, b, err)
		}
	})
}
