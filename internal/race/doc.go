// Package race tells tests whether the race detector is on, and how many
// times a determinism test repeats a run under it.
package race

// DeterministicRuns is how many times a determinism test repeats a run at
// each GOMAXPROCS: n, or at most 3 under the race detector. Its runtime
// shuffles the scheduler's run queues (runtime.randomizeScheduler), so a
// trace that depends on which goroutine runs first changes within a run
// or two there (each determinism test names the breaks it was checked
// with); without the detector runs cost a twentieth as much, so n stays.
func DeterministicRuns(n int) int {
	if Enabled {
		return min(n, 3)
	}
	return n
}
