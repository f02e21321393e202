package link

import (
	"fmt"
	"time"
)

// FormatDuration writes a duration with units a person reads at a glance:
// 12.50 s, 40.0 ms, 5 µs, 0.
func FormatDuration(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	case d > 0:
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	}
	return "0"
}
