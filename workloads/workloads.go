package workloads

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/netemu/netemu/emu"
)

// Path is what the analytical model knows of the network.
type Path struct {
	RTT        time.Duration
	Rate       float64       // bits per second; 0 means unlimited
	DelayedACK time.Duration // 0 means none
}

// transfer is the time n bytes take at the path's rate.
func (p Path) transfer(n int64) time.Duration {
	if p.Rate == 0 {
		return 0
	}
	return time.Duration(float64(n) * 8 / p.Rate * 1e9)
}

// Model is the analytical estimate: RoundTrips × RTT + Bytes ÷ Rate, plus
// delayed-ACK stalls where the workload has them.
type Model struct {
	Elapsed    time.Duration
	RoundTrips float64       // round trips the model assumed
	Transfer   time.Duration // bytes ÷ rate
	Stalls     time.Duration // delayed-ACK waits (nagle)
	PerRound   time.Duration // nagle: the model of one round
}

func model(p Path, roundTrips float64, bytes int64, stalls time.Duration) Model {
	m := Model{RoundTrips: roundTrips, Transfer: p.transfer(bytes), Stalls: stalls}
	m.Elapsed = time.Duration(roundTrips*float64(p.RTT)) + m.Transfer + stalls
	return m
}

// Result is the outcome of one workload run. Fields a workload does not
// fill stay zero.
type Result struct {
	Workload string
	Started  time.Time     // on the run's clock, just before the first dial
	Elapsed  time.Duration // first dial to last byte
	Model    Model
	Bytes    int64 // payload bytes the client received
	Conns    int   // connections opened
	Requests int

	// page
	RequestsPerConn float64
	// bulk
	Goodput float64 // bits per second of payload
	// keepalive
	Mode       string        // "fresh" or "reuse"
	PerRequest time.Duration // Elapsed ÷ Requests
	// nagle
	NoDelay       bool
	Write         string // "split" or "coalesced"
	Rounds        []time.Duration
	RoundMedian   time.Duration
	RoundMean     time.Duration
	RoundMax      time.Duration
	StalledRounds int
}

// A Workload runs against a network and knows its model.
type Workload interface {
	Name() string
	Validate() error
	Run(ctx context.Context, env emu.Env, p Path) (Result, error)
}

const httpPort = 80

// server runs an HTTP/1.1 server on the env's server side until stop is
// called. Responses carry a Date from the run's clock, so that virtual
// runs send the same bytes every time.
type server struct {
	srv  *http.Server
	done chan struct{}
}

func startServer(env emu.Env, h http.Handler) (*server, error) {
	ln, err := env.Listen(httpPort)
	if err != nil {
		return nil, err
	}
	s := &server{done: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", env.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/octet-stream")
		h.ServeHTTP(w, r)
	})}
	env.Go(func() {
		defer close(s.done)
		s.srv.Serve(ln)
	})
	return s, nil
}

func (s *server) stop() {
	s.srv.Close()
	<-s.done
}

// blob serves n bytes of a fixed pattern.
func blob(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Length", strconv.Itoa(n))
	chunk := make([]byte, min(n, 32<<10))
	for i := range chunk {
		chunk[i] = byte('a' + i%26)
	}
	for n > 0 {
		m, err := w.Write(chunk[:min(n, len(chunk))])
		if err != nil {
			return
		}
		n -= m
	}
}

// client is an HTTP client whose connections go through env, counting
// them.
type client struct {
	*http.Client
	tr *http.Transport

	mu    sync.Mutex
	conns int
}

func newClient(env emu.Env, maxConns int) *client {
	c := &client{}
	c.tr = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			conn, err := env.Dial(ctx, httpPort)
			if err == nil {
				c.mu.Lock()
				c.conns++
				c.mu.Unlock()
			}
			return conn, err
		},
		MaxConnsPerHost:     maxConns,
		MaxIdleConnsPerHost: maxConns,
		DisableCompression:  true,
	}
	c.Client = &http.Client{Transport: c.tr}
	return c
}

func (c *client) opened() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns
}

// get fetches url and returns the body's length.
func (c *client) get(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.Copy(io.Discard, resp.Body)
}

// summarize fills the round statistics of r.
func summarize(r *Result) {
	if len(r.Rounds) == 0 {
		return
	}
	s := append([]time.Duration(nil), r.Rounds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		r.RoundMedian = s[len(s)/2]
	} else {
		r.RoundMedian = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	r.RoundMean = sum / time.Duration(len(s))
	r.RoundMax = s[len(s)-1]
}

func ceilDiv(a, b int) int { return int(math.Ceil(float64(a) / float64(b))) }

// Same reports whether a and b are the same workload once defaults are
// filled in (Page{} and Page{Resources: 40} are the same).
func Same(a, b Workload) bool {
	return withDefaults(a) == withDefaults(b)
}

func withDefaults(w Workload) Workload {
	switch v := w.(type) {
	case Page:
		return v.withDefaults()
	case Bulk:
		return v.withDefaults()
	case KeepAlive:
		return v.withDefaults()
	case Nagle:
		return v.withDefaults()
	}
	return w
}

// Headline is the figure a result is judged by, with its model: the
// median round for nagle, the whole run otherwise.
func (r Result) Headline() (got, model time.Duration) {
	if r.Workload == "nagle" && len(r.Rounds) > 0 {
		return r.RoundMedian, r.Model.PerRound
	}
	return r.Elapsed, r.Model.Elapsed
}
