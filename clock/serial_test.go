package clock

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Calls due at one instant run in the order they were set, one at a
// time, after the calls due earlier; Stop cancels, Reset moves a call
// behind those set before it; Close drops what is pending and ends the
// clock's goroutine (synctest.Test would report it otherwise).
func TestSerialOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSerial()
		defer s.Close()
		var mu sync.Mutex
		var got []string
		add := func(name string) func() {
			return func() {
				mu.Lock()
				got = append(got, name)
				mu.Unlock()
			}
		}
		s.AfterFunc(10*time.Millisecond, add("b1"))
		a := s.AfterFunc(10*time.Millisecond, add("a"))
		s.AfterFunc(5*time.Millisecond, add("early"))
		s.AfterFunc(10*time.Millisecond, add("b2"))
		stopped := s.AfterFunc(10*time.Millisecond, add("stopped"))
		a.Reset(10 * time.Millisecond) // now set after b2
		if !stopped.Stop() || stopped.Stop() {
			t.Errorf("Stop: want true once, then false")
		}
		never := s.AfterFunc(time.Hour, add("never"))
		start := time.Now()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		if want := []string{"early", "b1", "b2", "a"}; !slices.Equal(got, want) {
			t.Errorf("calls ran %v; want %v", got, want)
		}
		mu.Unlock()
		if time.Since(start) != 20*time.Millisecond {
			t.Errorf("the bubble's time moved %v; want 20ms", time.Since(start))
		}
		s.Close()
		if never.Stop() {
			t.Errorf("a call pending at Close is still pending")
		}
	})
}

// Many calls due at one instant, from several goroutines' timers, run
// in one order every time: the order they were set.
func TestSerialRepeats(t *testing.T) {
	var first []int
	for run := range 20 {
		synctest.Test(t, func(t *testing.T) {
			s := NewSerial()
			defer s.Close()
			var got []int
			var mu sync.Mutex
			for i := range 50 {
				s.AfterFunc(time.Duration(i%3)*time.Millisecond, func() {
					mu.Lock()
					got = append(got, i)
					mu.Unlock()
				})
			}
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			if run == 0 {
				first = got
			} else if !slices.Equal(got, first) {
				t.Fatalf("run %d: %v; run 0: %v", run, got, first)
			}
			// Due at 0, 1 and 2 ms by i%3, each instant's in the order set.
			var want []int
			for r := range 3 {
				for i := r; i < 50; i += 3 {
					want = append(want, i)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("calls ran %v; want %v", got, want)
			}
		})
	}
}
