package synctest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/netemu/netemu/emutest"
)

// fetch is code under test, as it would be written for production: it
// tries a GET up to tries times, sleeping backoff, then twice as long,
// between failures, and gives up when ctx ends.
func fetch(ctx context.Context, client *http.Client, url string, tries int, backoff time.Duration) (int, error) {
	for i := 1; ; i++ {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body) // drained, so the connection is reused
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return i, nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if i == tries {
			return i, err
		}
		select {
		case <-time.After(backoff):
			backoff *= 2
		case <-ctx.Done():
			return i, ctx.Err()
		}
	}
}

// flaky fails its first two requests.
func flaky() http.Handler {
	var n atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	})
}

// Three tries over a 100 ms link with backoffs of 1 s and 2 s: the first
// try opens the connection (2 round trips), the next two reuse it (one
// each), so the whole takes 3 s of backoff and 400 ms of network, exactly.
func TestRetriesTakeTheirBackoffAndRoundTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := emutest.New(t, emutest.RTT(100*time.Millisecond))
		n.HTTPServer(80, flaky())
		client := &http.Client{Transport: emutest.NewTransport(n)}
		defer client.CloseIdleConnections()
		n.Run(func(ctx context.Context) {
			start := time.Now()
			tries, err := fetch(ctx, client, "http://server/", 5, time.Second)
			if err != nil || tries != 3 {
				t.Fatalf("fetch: %d tries, %v; want success on the third", tries, err)
			}
			if got, want := time.Since(start), 3*time.Second+400*time.Millisecond; got != want {
				t.Errorf("fetch took %v; want %v", got, want)
			}
		})
	})
}

// The same code under a context timeout of 2.5 s: it is sleeping its
// second backoff when the context ends, 2.5 s after it began.
func TestRetriesStopAtTheContextsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := emutest.New(t, emutest.RTT(100*time.Millisecond))
		n.HTTPServer(80, flaky())
		client := &http.Client{Transport: emutest.NewTransport(n)}
		defer client.CloseIdleConnections()
		n.Run(func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(ctx, 2500*time.Millisecond)
			defer cancel()
			start := time.Now()
			tries, err := fetch(ctx, client, "http://server/", 5, time.Second)
			if !errors.Is(err, context.DeadlineExceeded) || tries != 2 || time.Since(start) != 2500*time.Millisecond {
				t.Errorf("fetch: %d tries, %v after %v; want the deadline during the second backoff, after 2.5s", tries, err, time.Since(start))
			}
		})
	})
}
