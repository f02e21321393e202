package workloads

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
)

// RPC's defaults: a chatty client of a database or an RPC service.
const (
	DefaultRPCCalls    = 100
	DefaultRPCRequest  = 100  // bytes
	DefaultRPCResponse = 1000 // bytes
)

const rpcPort = 7000

var rpcKind = Kind{
	Name:  "rpc",
	About: "sequential request/response calls on one raw TCP connection, as a database or RPC client makes",
	Flags: func(fs *flag.FlagSet) func() ([]Workload, error) {
		calls := positive(fs, "calls", DefaultRPCCalls, "sequential calls")
		request := size(fs, "request", DefaultRPCRequest, 1, "100", "bytes of each request")
		response := size(fs, "response", DefaultRPCResponse, 1, "1KB", "bytes of each response")
		return func() ([]Workload, error) {
			n, err := calls()
			if err != nil {
				return nil, err
			}
			req, err := request()
			if err != nil {
				return nil, err
			}
			resp, err := response()
			if err != nil {
				return nil, err
			}
			return []Workload{RPC{Calls: n, Request: req, Response: resp}}, nil
		}
	},
}

// RPC makes Calls sequential calls on one TCP connection: the client
// writes a Request-byte request and reads the Response-byte reply, which
// the server sends once it has the whole request. TCP_NODELAY is on at
// both ends, as Go's net package and most drivers set it.
type RPC struct {
	Calls    int // 0 means DefaultRPCCalls
	Request  int // bytes; 0 means DefaultRPCRequest
	Response int // bytes; 0 means DefaultRPCResponse
}

// RPCDetail is RPC's own figures.
type RPCDetail struct {
	Calls     []time.Duration // each call, request written to reply read
	Call      Spread
	ModelCall time.Duration // the model of one call
}

// Summary implements Detail.
func (d RPCDetail) Summary() string {
	return fmt.Sprintf("call median %s, max %s (model %s)", link.FormatDuration(d.Call.Median),
		link.FormatDuration(d.Call.Max), link.FormatDuration(d.ModelCall))
}

// MarshalJSON writes the record's rpc fields.
func (d RPCDetail) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		CallMedian float64 `json:"call_ms_median"`
		CallMean   float64 `json:"call_ms_mean"`
		CallMax    float64 `json:"call_ms_max"`
		ModelCall  float64 `json:"model_call_ms"`
	}{ms(d.Call.Median), ms(d.Call.Mean), ms(d.Call.Max), ms(d.ModelCall)})
}

// Name implements Workload.
func (RPC) Name() string { return "rpc" }

// Variant implements Workload: rpc has none.
func (RPC) Variant() string { return "" }

// WithDefaults implements Workload.
func (r RPC) WithDefaults() Workload {
	if r.Calls == 0 {
		r.Calls = DefaultRPCCalls
	}
	if r.Request == 0 {
		r.Request = DefaultRPCRequest
	}
	if r.Response == 0 {
		r.Response = DefaultRPCResponse
	}
	return r
}

// Validate implements Workload.
func (r RPC) Validate() error {
	switch {
	case r.Calls < 0:
		return fmt.Errorf("rpc: calls is %d; want 1 or more", r.Calls)
	case r.Request < 0:
		return fmt.Errorf("rpc: request is %d bytes; want 1 or more", r.Request)
	case r.Response < 0:
		return fmt.Errorf("rpc: response is %d bytes; want 1 or more", r.Response)
	}
	return nil
}

// Model: a handshake, then one round trip per call, plus each call's
// bytes at the link's rate (request and reply cross one after the other).
func (r RPC) Model(path Path) Model {
	r = r.WithDefaults().(RPC)
	return model(path, float64(1+r.Calls), int64(r.Calls)*int64(r.Request+r.Response), 0)
}

// modelCall is the model of one call.
func (r RPC) modelCall(path Path) time.Duration {
	return path.RTT + path.transfer(int64(r.Request+r.Response))
}

// Run implements Workload.
func (r RPC) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	stop, err := serveOne(env, rpcPort, r.serve)
	if err != nil {
		return Result{}, err
	}
	defer stop()

	start := env.Now()
	c, err := env.Dial(ctx, rpcPort)
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	req, reply := pattern(r.Request), make([]byte, r.Response)
	d := RPCDetail{ModelCall: r.modelCall(path)}
	var bytes int64
	for i := range r.Calls {
		t0 := env.Now()
		if _, err := c.Write(req); err != nil {
			return Result{}, fmt.Errorf("call %d: %w", i, err)
		}
		n, err := io.ReadFull(c, reply)
		bytes += int64(n)
		if err != nil {
			return Result{}, fmt.Errorf("call %d: %w", i, err)
		}
		d.Calls = append(d.Calls, env.Now().Sub(t0))
	}
	elapsed := env.Now().Sub(start)
	d.Call = spread(d.Calls)
	return Result{Started: start, Elapsed: elapsed, Bytes: bytes, Conns: 1, Requests: r.Calls, Detail: d}, nil
}

// serve answers each whole request read on one connection with a reply.
func (r RPC) serve(ln net.Listener) error {
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	req, reply := make([]byte, r.Request), pattern(r.Response)
	for {
		if _, err := io.ReadFull(c, req); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if _, err := c.Write(reply); err != nil {
			return err
		}
	}
}
