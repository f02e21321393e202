package workloads

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
)

// gateParties runs three parties through a gate with a stagger of 1 ms
// on the virtual clock, party i arriving i × 10 µs into the run (the
// last at 20 µs); cancel, if not 0, ends their context that long into
// the run. It returns when each went on, after the run's start (-1 for
// one that did not), and what pass returned.
func gateParties(t *testing.T, cancel time.Duration) ([3]time.Duration, [3]error) {
	t.Helper()
	n, err := emu.New(emu.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var went [3]time.Duration
	var errs [3]error
	err = n.Run(context.Background(), func(ctx context.Context) error {
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		start := n.Now()
		g := NewGate(3, time.Millisecond)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Add(1)
			n.Go(func() {
				defer wg.Done()
				went[i] = -1
				if err := n.Sleep(ctx, time.Duration(i)*10*time.Microsecond); err != nil {
					errs[i] = err
					return
				}
				if errs[i] = g.pass(ctx, n); errs[i] == nil {
					went[i] = n.Now().Sub(start)
				}
			})
		}
		if cancel > 0 {
			if err := n.Sleep(ctx, cancel); err != nil {
				return err
			}
			stop()
		}
		wg.Wait()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return went, errs
}

// A gate lets its parties go in the order they arrived, the k-th k
// staggers after the last arrival.
func TestGateStaggersInArrivalOrder(t *testing.T) {
	went, errs := gateParties(t, 0)
	for i, want := range []time.Duration{20 * time.Microsecond, 1020 * time.Microsecond, 2020 * time.Microsecond} {
		if errs[i] != nil || went[i] != want {
			t.Errorf("party %d (arrived at %v) went on at %v, %v; want at %v", i, time.Duration(i)*10*time.Microsecond, went[i], errs[i], want)
		}
	}
}

// A context that ends while parties wait their turn lets none of them
// go on: they would start on a network that is closing.
func TestGateCancelledReleasesNobodyLate(t *testing.T) {
	went, errs := gateParties(t, 1500*time.Microsecond)
	if errs[0] != nil || went[0] != 20*time.Microsecond {
		t.Errorf("party 0 went on at %v, %v; want at 20µs, before the end", went[0], errs[0])
	}
	if errs[1] != nil || went[1] != 1020*time.Microsecond {
		t.Errorf("party 1 went on at %v, %v; want at 1.02ms, before the end", went[1], errs[1])
	}
	if errs[2] == nil || went[2] != -1 {
		t.Errorf("party 2 went on at %v, %v; want held, with the context's error", went[2], errs[2])
	}
}
