package workloads

import (
	"time"

	"github.com/netemu/netemu/stats"
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
	s := stats.Sorted(ds)
	sp := Spread{Median: stats.Median(s)}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	sp.Mean = sum / time.Duration(len(s))
	sp.Max = s[len(s)-1]
	return sp
}
