package realclient

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CurlTimes reads the times curl's -w printed in seconds (%{time_total},
// %{time_connect}, ...), separated by white space, and wants exactly n
// of them.
func CurlTimes(out string, n int) ([]time.Duration, error) {
	var ds []time.Duration
	for _, f := range strings.Fields(out) {
		s, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("curl wrote %q, which has %q where a time in seconds should be", out, f)
		}
		ds = append(ds, time.Duration(s*float64(time.Second)))
	}
	if len(ds) != n {
		return nil, fmt.Errorf("curl wrote %q; want %d times", out, n)
	}
	return ds, nil
}
