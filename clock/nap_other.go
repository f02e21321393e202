//go:build !linux

package clock

import "time"

// nap sleeps for about d.
func nap(d time.Duration) { time.Sleep(d) }
