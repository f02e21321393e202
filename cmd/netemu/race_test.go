//go:build race

package main

// raceEnabled says whether the race detector is on: its shadow memory
// and slowdown make heap measurements meaningless.
const raceEnabled = true
