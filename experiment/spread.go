package experiment

import (
	"context"
	"time"

	"github.com/netemu/netemu/stats"
	"github.com/netemu/netemu/workloads"
)

// Spread summarizes several runs of one cell: lossy cells are
// distributions, so they are reported as a median with the 10th and 90th
// percentiles (nearest rank), and the median drops and retransmits.
type Spread struct {
	Runs        int           `json:"runs"`
	Median      time.Duration `json:"-"`
	P10, P90    time.Duration `json:"-"`
	MedianMs    float64       `json:"median_ms"`
	P10Ms       float64       `json:"p10_ms"`
	P90Ms       float64       `json:"p90_ms"`
	Drops       float64       `json:"drops_median"` // -1 where the backend counts none
	Retransmits float64       `json:"retransmits_median"`
}

// Summary is the record that follows the records of a cell's runs with
// several seeds: what ran (the setup, without a seed), which seeds, and
// the spread of the headline figure over them.
type Summary struct {
	Setup
	Summary bool   `json:"summary"` // always true: tells it from the runs' records
	Seeds   string `json:"seeds"`   // "1-20"
	Spread
	ModelMs float64 `json:"model_ms"`
	// Failed counts the seeds whose run failed; the spread is over the
	// others.
	Failed      int    `json:"failed_runs,omitempty"`
	Study       string `json:"study,omitempty"`
	StudySHA256 string `json:"study_sha256,omitempty"`
}

// SpreadOf summarizes runs: their headline times, and their records for
// drops and retransmits.
func SpreadOf(times []time.Duration, recs []Record) Spread {
	s := Spread{Runs: len(times)}
	if len(times) == 0 {
		return s
	}
	t := stats.Sorted(times)
	s.Median, s.P10, s.P90 = stats.Quantile(t, 0.5), stats.Quantile(t, 0.1), stats.Quantile(t, 0.9)
	s.MedianMs, s.P10Ms, s.P90Ms = Ms(s.Median), Ms(s.P10), Ms(s.P90)
	var drops, retx []float64
	for _, r := range recs {
		if r.Drops != nil {
			drops = append(drops, float64(*r.Drops))
		}
		if r.Retransmits != nil {
			retx = append(retx, float64(*r.Retransmits))
		}
	}
	s.Drops, s.Retransmits = medianOf(drops), medianOf(retx)
	return s
}

// medianOf is the median of v, -1 for none (a backend that counts none).
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return -1
	}
	return stats.Median(stats.Sorted(v))
}

// Repeat runs c on b runs times, with seeds 1 to runs (the link's
// impairments draw from the seed, so run i of any backend meets the same
// draws), watched by the totals' instruments. each, if not nil, receives
// every run's result and record as it ends. It returns the runs' headline
// times in seed order, their records, and the last result.
func Repeat(ctx context.Context, b Backend, c Case, runs int, each func(workloads.Result, Record) error) ([]time.Duration, []Record, workloads.Result, error) {
	var times []time.Duration
	var recs []Record
	var last workloads.Result
	for i := range runs {
		c.Seed = uint64(i + 1)
		r, rec, _, err := Measure(ctx, b, c, Instruments{})
		if err != nil {
			return times, recs, last, err
		}
		if each != nil {
			if err := each(r, rec); err != nil {
				return times, recs, last, err
			}
		}
		got, _ := r.Headline()
		times, recs, last = append(times, got), append(recs, rec), r
	}
	return times, recs, last, nil
}
