package workloads

import (
	"slices"
	"time"
)

// Spread summarizes a list of durations, such as nagle's rounds or rpc's
// calls.
type Spread struct {
	Median, Mean, Max time.Duration
}

func spread(ds []time.Duration) Spread {
	if len(ds) == 0 {
		return Spread{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sp Spread
	if len(s)%2 == 1 {
		sp.Median = s[len(s)/2]
	} else {
		sp.Median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	sp.Mean = sum / time.Duration(len(s))
	sp.Max = s[len(s)-1]
	return sp
}
