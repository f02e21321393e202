// Package stats holds the summaries netemu reports of several values: a
// run's many round trips, a cell's runs over seeds. One rule each, used
// everywhere: the median is the middle value, or the mean of the two
// middle ones; a quantile is the nearest rank.
package stats

import (
	"cmp"
	"math"
	"slices"
)

// Number is what Median averages.
type Number interface {
	~int | ~int64 | ~uint64 | ~float64
}

// Sorted returns a sorted copy of v.
func Sorted[T cmp.Ordered](v []T) []T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s
}

// Median returns the median of sorted: its middle value, or the mean of
// its two middle values (rounded toward zero for integers); the zero
// value for none.
func Median[T Number](sorted []T) T {
	n := len(sorted)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// Quantile returns the nearest-rank q-quantile of sorted, the value of
// rank ⌈q·n⌉ (counted from 1, at least 1), for 0 ≤ q ≤ 1; the zero value
// for none. A q·n within 1e-6 above a whole number counts as that
// number, so that a product such as 0.28·25 = 7.000000000000001 does
// not skip a rank.
func Quantile[T any](sorted []T, q float64) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	i := int(math.Ceil(q*float64(len(sorted))-1e-6)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
