package stats

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{1, 2, 9}, 2},
		{[]float64{1, 2, 4, 9}, 3},
	} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v; want %v", c.in, got, c.want)
		}
	}
	// Integers: the mean of the middle two rounds toward zero, as
	// durations divide.
	if got := Median([]time.Duration{1, 2}); got != 1 {
		t.Errorf("Median(1ns, 2ns) = %v; want 1ns", got)
	}
}

func TestQuantile(t *testing.T) {
	ten := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		q    float64
		want int
	}{
		{0, 1}, {0.1, 1}, {0.11, 2}, {0.5, 5}, {0.9, 9}, {0.91, 10}, {1, 10},
	} {
		if got := Quantile(ten, c.q); got != c.want {
			t.Errorf("Quantile(1..10, %v) = %v; want %v", c.q, got, c.want)
		}
	}
	// 0.28·25 is 7.000000000000001 in floating point: still rank 7.
	v := make([]int, 25)
	for i := range v {
		v[i] = i + 1
	}
	if got := Quantile(v, 0.28); got != 7 {
		t.Errorf("Quantile(1..25, 0.28) = %v; want 7", got)
	}
	if got := Quantile([]int(nil), 0.5); got != 0 {
		t.Errorf("Quantile(none) = %v; want 0", got)
	}
}

func TestSorted(t *testing.T) {
	in := []int{3, 1, 2}
	if s := Sorted(in); s[0] != 1 || s[2] != 3 || in[0] != 3 {
		t.Errorf("Sorted(%v) = %v; want a sorted copy, the input kept", in, s)
	}
}
