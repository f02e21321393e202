package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/emu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
)

// record is one measured case as a JSON line.
type record struct {
	Workload        string         `json:"workload"`
	Backend         string         `json:"backend"`
	Clock           string         `json:"clock"`
	RTTms           float64        `json:"rtt_ms"`
	RateBps         float64        `json:"rate_bps"`
	QueuePackets    int            `json:"queue_packets,omitempty"`
	QueueBytes      int            `json:"queue_bytes,omitempty"`
	DelackMs        float64        `json:"delack_ms"`
	MTU             int            `json:"mtu"`
	CC              string         `json:"cc"`
	Seed            *uint64        `json:"seed,omitempty"`
	ElapsedMs       float64        `json:"elapsed_ms"`
	ModelMs         float64        `json:"model_ms"`
	ModelRoundTrips float64        `json:"model_round_trips"`
	Conns           int            `json:"conns"`
	Requests        int            `json:"requests"`
	Bytes           int64          `json:"bytes"`
	Drops           *uint64        `json:"drops,omitempty"`
	PeakQueue       *int           `json:"peak_queue_packets,omitempty"`
	ACKsHeld        uint64         `json:"acks_held"`
	TraceSHA256     string         `json:"trace_sha256"`
	Mode            string         `json:"mode,omitempty"`
	PerRequestMs    *float64       `json:"per_request_ms,omitempty"`
	RequestsPerConn *float64       `json:"requests_per_conn,omitempty"`
	GoodputBps      *float64       `json:"goodput_bps,omitempty"`
	NoDelay         *bool          `json:"nodelay,omitempty"`
	Write           string         `json:"write,omitempty"`
	RoundMsMedian   *float64       `json:"round_ms_median,omitempty"`
	RoundMsMean     *float64       `json:"round_ms_mean,omitempty"`
	RoundMsMax      *float64       `json:"round_ms_max,omitempty"`
	ModelRoundMs    *float64       `json:"model_round_ms,omitempty"`
	StalledRounds   *int           `json:"stalled_rounds,omitempty"`
	Retransmits     *int           `json:"retransmits,omitempty"`
	MaxCwndBytes    *int           `json:"max_cwnd_bytes,omitempty"`
	SRTTms          *float64       `json:"srtt_ms,omitempty"`
	Explain         *explainRecord `json:"explain,omitempty"`
	Kernel          *kernel.Facts  `json:"kernel,omitempty"`
	LateMeanUs      *float64       `json:"delivery_late_us_mean,omitempty"`
	TUNWriteErrors  *uint64        `json:"tun_write_errors,omitempty"`
	LateP99Us       *float64       `json:"delivery_late_us_p99,omitempty"`
	Table           string         `json:"table,omitempty"`
	ReferenceMs     *float64       `json:"reference_ms,omitempty"`
	DiffPct         *float64       `json:"diff_pct,omitempty"`
}

func msf(d time.Duration) float64 { return float64(d) / 1e6 }
func ptr[T any](v T) *T           { return &v }

func newRecord(c workloads.Case, r workloads.Result, st emu.Stats) record {
	lc := c.Link
	eff := lc
	if eff.QueuePackets == 0 && eff.QueueBytes == 0 {
		eff.QueuePackets = link.DefaultQueuePackets
	}
	mtu := lc.MTU
	if mtu == 0 {
		mtu = link.DefaultMTU
	}
	cc := c.TCP.CongestionControl
	if cc == "" {
		cc = "cubic"
	}
	rec := record{
		Workload: r.Workload, Backend: "emulated", Clock: c.Clock.String(),
		RTTms: msf(2 * lc.Delay), RateBps: lc.Rate, QueuePackets: eff.QueuePackets, QueueBytes: eff.QueueBytes,
		DelackMs: msf(lc.DelayedACK), MTU: mtu, CC: cc, Seed: ptr(c.Seed),
		ElapsedMs: msf(r.Elapsed), ModelMs: msf(r.Model.Elapsed), ModelRoundTrips: r.Model.RoundTrips,
		Conns: r.Conns, Requests: r.Requests, Bytes: r.Bytes,
		Drops:       ptr(st.Link[0].Drops.Total() + st.Link[1].Drops.Total()),
		PeakQueue:   ptr(max(st.Link[0].PeakQueuePackets, st.Link[1].PeakQueuePackets)),
		ACKsHeld:    st.Link[0].ACKsHeld + st.Link[1].ACKsHeld,
		TraceSHA256: st.TraceSHA256,
	}
	switch r.Workload {
	case "page":
		rec.RequestsPerConn = ptr(r.RequestsPerConn)
	case "bulk":
		rec.GoodputBps = ptr(r.Goodput)
	case "keepalive":
		rec.Mode = r.Mode
		rec.PerRequestMs = ptr(msf(r.PerRequest))
	case "nagle":
		rec.NoDelay = ptr(r.NoDelay)
		rec.Write = r.Write
		rec.RoundMsMedian = ptr(msf(r.RoundMedian))
		rec.RoundMsMean = ptr(msf(r.RoundMean))
		rec.RoundMsMax = ptr(msf(r.RoundMax))
		rec.ModelRoundMs = ptr(msf(r.Model.PerRound))
		rec.StalledRounds = ptr(r.StalledRounds)
	}
	return rec
}

// fmtDur prints a duration with units a person reads at a glance.
func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", msf(d))
	case d > 0:
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	}
	return "0"
}

func pct(got, want float64) string {
	if want == 0 || got == 0 {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", (got-want)/want*100)
}

func variant(r workloads.Result) string {
	switch r.Workload {
	case "keepalive":
		return r.Mode
	case "nagle":
		n := "nagle on"
		if r.NoDelay {
			n = "nagle off"
		}
		return n + ", " + r.Write
	}
	return ""
}

func detail(r workloads.Result) string {
	switch r.Workload {
	case "page":
		return fmt.Sprintf("%d requests, %.1f per conn", r.Requests, r.RequestsPerConn)
	case "bulk":
		return fmt.Sprintf("goodput %.2f Mbit/s", r.Goodput/1e6)
	case "keepalive":
		return fmt.Sprintf("%s per request", fmtDur(r.PerRequest))
	case "nagle":
		return fmt.Sprintf("round median %s, max %s (model %s), %d/%d stalled", fmtDur(r.RoundMedian), fmtDur(r.RoundMax),
			fmtDur(r.Model.PerRound), r.StalledRounds, len(r.Rounds))
	}
	return ""
}

func cmdRun(ctx context.Context, args []string, w, stderr io.Writer, sweep bool) error {
	name := "run"
	if sweep {
		name = "sweep"
	}
	o, cases, err := parseCases(name, args, sweep)
	if err != nil {
		return err
	}
	var tw *tabwriter.Writer
	if !o.json {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "workload\trtt\trate\tcase\telapsed\tmodel\tvs model\tconns\tdrops\t")
	}
	enc := json.NewEncoder(w)
	slow := len(cases) > 1 || o.clock == "real" || o.backend == kernelBE
	bar := newProgress(stderr, len(cases), slow)
	defer bar.close()
	var results []workloads.Result
	for _, c := range cases {
		bar.start(caseLabel(c))
		vname := o.caseVariant(c, len(cases) > 1)
		r, rec, in, err := o.measure(ctx, c, o.backend, vname, true)
		bar.finish()
		if err != nil {
			return err
		}
		results = append(results, r)
		if o.plot != "" && !sweep {
			title := r.Workload
			if v := variant(r); v != "" {
				title += " (" + v + ")"
			}
			if err := runFigure(title, in.timeline).Save(variantPath(o.plot, vname)); err != nil {
				return err
			}
		}
		if o.json {
			if err := enc.Encode(rec); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t  %s\n", r.Workload, fmtDur(2*c.Link.Delay), link.FormatRate(c.Link.Rate),
			o.caseName(c, r), fmtDur(r.Elapsed), fmtDur(r.Model.Elapsed), pct(msf(r.Elapsed), msf(r.Model.Elapsed)), r.Conns, *rec.Drops, detail(r))
	}
	if sweep && o.plot != "" {
		if err := sweepFigure(cases, results).Save(o.plot); err != nil {
			return err
		}
	}
	if tw != nil {
		return tw.Flush()
	}
	return nil
}

func cmdReproduce(ctx context.Context, args []string, w, stderr io.Writer) error {
	o := &options{}
	fs := newFlagSet("reproduce", o)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("reproduce: unexpected argument %q; it takes --json, --seed, --clock, --backend and --link", fs.Arg(0))
	}
	o.set = setFlags(fs)
	for name := range o.set {
		switch name {
		case "json", "seed", "clock", "backend", "link":
		default:
			return usagef("reproduce: --%s does not apply: reproduce runs the reference cells as published (it takes --json, --seed, --clock, --backend and --link)", name)
		}
	}
	if err := o.notApplicable("reproduce"); err != nil {
		return err
	}
	clk, err := o.clockMode()
	if err != nil {
		return err
	}
	if err := o.checkBackend(); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	var tw *tabwriter.Writer
	var lastKernel *kernel.Facts
	table := ""
	bar := newProgress(stderr, len(workloads.References), true)
	defer bar.close()
	for _, ref := range workloads.References {
		c := ref.Case(o.seed)
		c.Clock = clk
		bar.start(ref.Table + " " + ref.Label)
		r, rec, _, err := o.measure(ctx, c, o.backend, "", false)
		bar.finish()
		if err != nil {
			return err
		}
		if rec.Kernel != nil {
			lastKernel = rec.Kernel
		}
		got, model := r.Headline()
		if o.json {
			rec.Table = ref.Table
			rec.ReferenceMs = ptr(msf(ref.Time))
			if got > 0 { // at RTT 0 the virtual clock counts no time: no difference
				rec.DiffPct = ptr((msf(got) - msf(ref.Time)) / msf(ref.Time) * 100)
			}
			if err := enc.Encode(rec); err != nil {
				return err
			}
			continue
		}
		if ref.Table != table {
			if tw != nil {
				tw.Flush()
				fmt.Fprintln(w)
			}
			table = ref.Table
			fmt.Fprintf(w, "%s\n", table)
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			name := "netemu"
			if o.backend == kernelBE {
				name = "kernel"
			}
			fmt.Fprintf(tw, "\treference\t%s\tmodel\t%s vs reference\t\n", name, name)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", ref.Label, fmtDur(ref.Time), fmtDur(got), fmtDur(model), pct(msf(got), msf(ref.Time)))
	}
	if tw != nil {
		tw.Flush()
		note := reproduceNote
		if o.backend == kernelBE && lastKernel != nil {
			f := lastKernel
			note = fmt.Sprintf(kernelNote, f.Kernel, f.HZ, f.Link, f.CongestionControl, f.PingpongThresh, f.SlowStartAfterIdle)
		}
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(note))
	}
	return nil
}

const kernelNote = `
reference: Linux TCP over tc netem, as published. kernel: this machine's kernel TCP in two network namespaces:
kernel %s (HZ %d), link %s, cc %s, tcp_pingpong_thresh %s, tcp_slow_start_after_idle %s. model: round trips × RTT
+ bytes ÷ rate (+ delayed-ACK waits for nagle).`

const reproduceNote = `
reference: Linux TCP over tc netem, as published. netemu: gVisor TCP (cubic) on the emulated link, virtual clock,
1000-packet queue, 40 ms delayed ACK. model: round trips × RTT + bytes ÷ rate (+ delayed-ACK waits for nagle).
At RTT 0 the reference figures are the kernel's processing time; the virtual clock counts no CPU time, so netemu
shows 0 there and no difference is computed.`

// caseLabel names a case for the progress bar.
func caseLabel(c workloads.Case) string {
	label := fmt.Sprintf("%s rtt %s rate %s", c.Workload.Name(), fmtDur(2*c.Link.Delay), link.FormatRate(c.Link.Rate))
	switch w := c.Workload.(type) {
	case workloads.KeepAlive:
		label += " " + w.Mode
	case workloads.Nagle:
		label += fmt.Sprintf(" nodelay=%v %s", w.NoDelay, w.Write)
	}
	return label
}

// caseName is the table's case column: the workload's variant, and the
// queue and delayed ACK when they are swept.
func (o *options) caseName(c workloads.Case, r workloads.Result) string {
	var parts []string
	if len(o.queue.vals) > 1 {
		if c.Link.QueueBytes > 0 {
			parts = append(parts, fmt.Sprintf("queue %d B", c.Link.QueueBytes))
		} else {
			parts = append(parts, fmt.Sprintf("queue %d", c.Link.QueuePackets))
		}
	}
	if len(o.delack.vals) > 1 {
		parts = append(parts, "delack "+fmtDur(c.Link.DelayedACK))
	}
	if v := variant(r); v != "" {
		parts = append(parts, v)
	}
	return strings.Join(parts, ", ")
}
