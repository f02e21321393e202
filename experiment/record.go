package experiment

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// Record is one measured case as one JSON object (a line of --json): the
// setup, the outcome every workload has, the workload's own fields (its
// Detail), and what instruments, the backend and a reference table add.
// Times are in milliseconds (µs where the name says so), rates in bits
// per second. Pointer fields are omitted where they are unknown.
type Record struct {
	Setup
	Outcome
	Detail workloads.Detail `json:"-"` // marshalled in place, between Outcome and Extra
	Extra
}

// Setup is what ran.
type Setup struct {
	Workload     string  `json:"workload"`
	Backend      string  `json:"backend"`
	Clock        string  `json:"clock"`
	RTTms        float64 `json:"rtt_ms"`
	RateBps      float64 `json:"rate_bps"`
	QueuePackets int     `json:"queue_packets,omitempty"`
	QueueBytes   int     `json:"queue_bytes,omitempty"`
	DelackMs     float64 `json:"delack_ms"` // the link's delayed-ACK stage: 0 where the TCP delays its own ACKs (netemu's, the kernel's)
	MTU          int     `json:"mtu"`
	CC           string  `json:"cc"`
	// TCP is the TCP implementation: "gvisor" or "netemu" (emulated),
	// "linux" (kernel).
	TCP  string  `json:"tcp"`
	Seed *uint64 `json:"seed,omitempty"` // emulated, and kernel mode with impairments
	// HostNoise is the emulated nodes' time to take a packet in
	// (link.Noise.String: "25µs+exp(30µs)", or "none" for a case run
	// Exact or on an ideal link), on the virtual clock only; for kernel
	// TCP, "own+" and the time Kernel.AddedNoise added to its nodes'.
	HostNoise string `json:"host_noise,omitempty"`
	// Netem is the link in tc's netem grammar when it has impairments:
	// the client→server direction, and NetemDown the server→client one
	// when it differs.
	Netem     string `json:"netem,omitempty"`
	NetemDown string `json:"netem_down,omitempty"`
	// Qdisc is the queue discipline in tc's grammar when it is not the
	// drop-tail FIFO, and QdiscDown the server→client direction's when it
	// differs (tc.Qdisc.String).
	Qdisc     string `json:"qdisc,omitempty"`
	QdiscDown string `json:"qdisc_down,omitempty"`
	// TraceUp and TraceDown name the trace that is a direction's rate
	// (link.Trace.Name), when one is; RateBps is the client→server
	// direction's fixed rate (0 when a trace is its rate).
	TraceUp   string `json:"trace_up,omitempty"`
	TraceDown string `json:"trace_down,omitempty"`
}

// Outcome is what every run measures.
type Outcome struct {
	ElapsedMs       float64 `json:"elapsed_ms"`
	ModelMs         float64 `json:"model_ms"`
	ModelRoundTrips float64 `json:"model_round_trips"`
	Conns           int     `json:"conns"`
	Requests        int     `json:"requests"`
	Bytes           int64   `json:"bytes"`
	Drops           *uint64 `json:"drops,omitempty"`
	// DropsBy splits the drops by reason (link.DropReason's names:
	// queue-full, loss, outage, ...); reasons with none are left out.
	DropsBy    map[string]uint64 `json:"drops_by_reason,omitempty"`
	Duplicated uint64            `json:"duplicated,omitempty"`
	Corrupted  uint64            `json:"corrupted,omitempty"` // delivered with a flipped bit, then dropped by the receiver's checksum
	Reordered  uint64            `json:"reordered,omitempty"`
	ECNMarked  uint64            `json:"ecn_marked,omitempty"` // marked CE by CoDel instead of dropped
	PeakQueue  *int              `json:"peak_queue_packets,omitempty"`
	ACKsHeld   uint64            `json:"acks_held"`  // by the link's delayed-ACK stage: 0 where the TCP delays its own (explain counts those)
	TraceHash  string            `json:"trace_hash"` // "" where the backend has no trace
}

// Extra is what instruments, the backend and a reference table add.
type Extra struct {
	Retransmits    *int          `json:"retransmits,omitempty"`
	MaxCwndBytes   *int          `json:"max_cwnd_bytes,omitempty"`
	SRTTms         *float64      `json:"srtt_ms,omitempty"`
	Explain        *Explanation  `json:"explain,omitempty"`
	Kernel         *kernel.Facts `json:"kernel,omitempty"`
	LateMeanUs     *float64      `json:"delivery_late_us_mean,omitempty"`
	TUNWriteErrors *uint64       `json:"tun_write_errors,omitempty"`
	LateP99Us      *float64      `json:"delivery_late_us_p99,omitempty"`
	LateMaxUs      *float64      `json:"delivery_late_us_max,omitempty"`
	// BridgeLate says why the run's figures are suspect, where the
	// bridge delivered late enough to change them (BridgeLateWhy).
	BridgeLate  string   `json:"bridge_late,omitempty"`
	Table       string   `json:"table,omitempty"`
	ReferenceMs *float64 `json:"reference_ms,omitempty"`
	DiffPct     *float64 `json:"diff_pct,omitempty"`
	// Study and StudySHA256 name the study file a sweep ran from, and
	// its contents' hash (netemu sweep --spec).
	Study       string `json:"study,omitempty"`
	StudySHA256 string `json:"study_sha256,omitempty"`
}

// Explanation is explain's breakdown of a run.
type Explanation struct {
	Ms          map[string]float64 `json:"ms"`           // time per category
	DelayedACKs int                `json:"delayed_acks"` // ACKs the delayed-ACK timer held (acks_held also counts those a newer ACK replaced)
	DelayedMs   float64            `json:"delayed_ms"`   // how long they were held, in all
	Waited      int                `json:"segments_waited"`
	Retransmits int                `json:"retransmits"`
	Drops       int                `json:"drops"`
	// Loss recovery: lost segments sent again by the way they were
	// repaired (keyed as ms is), tail-loss probes and retransmission
	// timeouts fired, timeouts that could have been probes, retransmissions
	// that repaired nothing the link lost, recoveries (window cuts).
	Repaired   map[string]int `json:"lost_repaired,omitempty"`
	Probes     int            `json:"tail_loss_probes"`
	Timeouts   int            `json:"timeouts"`
	Unsure     int            `json:"timeouts_unsure"`
	Unneeded   int            `json:"retransmits_unneeded"`
	Recoveries int            `json:"recoveries"`
	// DelayedBy says whose delayed-ACK timers DelayedACKs counts:
	// "link" (the link's delayed-ACK stage, for a TCP that ACKs at
	// once), "tcp" (the receiving TCP's own, as netemu's TCP reports
	// each ACK its timer sends) or "link+tcp".
	DelayedBy string `json:"delayed_acks_by"`
	// ACKs is the receivers' own counts of their ACKs over the run,
	// where the TCP counts them (netemu's TCP).
	ACKs *ACKCounts `json:"tcp_acks,omitempty"`
	// TCP is each connection end's TCP state as last sampled, with
	// tcp_info's names, where the TCP reports tcp_info (netemu's, kernel
	// TCP), in address order.
	TCP []TCPState `json:"tcp_state,omitempty"`
	// BBR is the stretches BBR senders spent in PROBE_RTT or long-term
	// mode, the first kept, with what each cost (explain's rule:
	// docs/SEEING.md), where the TCP reports BBR's state.
	BBR []BBRSpan `json:"bbr_spans,omitempty"`
}

// BBRSpan is explain.BBRSpan in a record.
type BBRSpan struct {
	Conn    string  `json:"conn"`  // the sending end, local→remote
	Phase   string  `json:"phase"` // PROBE_RTT or long-term mode
	FromMs  float64 `json:"from_ms"`
	ToMs    float64 `json:"to_ms"`
	Ongoing bool    `json:"ongoing,omitempty"` // not ended at the run's end
	CostMs  float64 `json:"cost_ms"`
}

// ACKCounts is explain.ACKCounts in a record, named as nstat names
// Linux's counters (TcpExtDelayedACKs, TcpExtDelayedACKLost) where
// Linux has one.
type ACKCounts struct {
	DelayedACKs    int     `json:"delayed_acks"`     // sent by the delayed-ACK timer
	DelayedACKLost int     `json:"delayed_ack_lost"` // data that came again, answered at once
	QuickACKs      int     `json:"quick_acks"`       // sent at once only because of quick-ACK mode
	DelayedMs      float64 `json:"delayed_ms"`       // how long the timer held them, in all
}

// TCPState is explain.TCPState in a record: tcp_info's names, in the
// order netemu explain prints them, times in milliseconds. Ssthresh is
// null while there is none (tcp_info's infinite).
type TCPState struct {
	Conn         string  `json:"conn"` // local→remote
	AtMs         float64 `json:"at_ms"`
	Cwnd         int     `json:"cwnd"`
	Ssthresh     *int    `json:"ssthresh"`
	SRTTms       float64 `json:"srtt_ms"`
	RTTVarMs     float64 `json:"rttvar_ms"`
	RTOms        float64 `json:"rto_ms"`
	Unacked      int     `json:"unacked"`
	Sacked       int     `json:"sacked"`
	Lost         int     `json:"lost"`
	Retrans      int     `json:"retrans"`
	TotalRetrans int     `json:"total_retrans"`
	Delivered    int     `json:"delivered"`
	CAState      string  `json:"ca_state"`
	RcvWnd       int     `json:"rcv_wnd"`
	RcvSsthresh  int     `json:"rcv_ssthresh"`
}

// MarshalJSON writes one flat object: Setup's fields, Outcome's, the
// Detail's, then Extra's.
func (r Record) MarshalJSON() ([]byte, error) {
	parts := []any{r.Setup, r.Outcome}
	if r.Detail != nil {
		parts = append(parts, r.Detail)
	}
	parts = append(parts, r.Extra)
	out := []byte{'{'}
	for _, p := range parts {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		b = bytes.TrimSpace(b)
		inner := b[1 : len(b)-1] // every part is an object
		if len(inner) == 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, inner...)
	}
	return append(out, '}'), nil
}

// Ms is a duration in milliseconds, as records write it.
func Ms(d time.Duration) float64 { return float64(d) / 1e6 }

func ptr[T any](v T) *T { return &v }

// fifoLimits are the limits of the client→server direction's FIFO as
// the record gives them: the packet limit asked for, or the default when
// no limit is, and the byte limit; zeros for another discipline.
func fifoLimits(lc link.Config) (packets, bytes int) {
	q := lc.Qdisc
	if !q.IsFIFO() {
		return 0, 0
	}
	if q.Limit == 0 && q.LimitBytes == 0 {
		q = lc.WithDefaults().Qdisc
	}
	return q.Limit, q.LimitBytes
}

// newRecord describes a run of c on the named backend; st is its link's
// counters.
func newRecord(backend string, c Case, r workloads.Result, st link.Stats) Record {
	lc := c.Link
	queue, queueBytes := fifoLimits(lc)
	var qdisc, qdiscDown string
	if !lc.Qdisc.IsFIFO() {
		qdisc = tc.Qdisc(lc.Qdisc).String()
	}
	if lc.BtoA != nil && lc.BtoA.Qdisc != lc.Qdisc {
		qdiscDown = tc.Qdisc(lc.BtoA.Qdisc).String()
	}
	mtu := lc.WithDefaults().MTU
	cc := c.TCP.CongestionControl
	if cc == "" {
		cc = tcpstack.DefaultCongestionControl
	}
	impl := string(c.TCP.Impl.OrDefault())
	if backend == "kernel" {
		impl = "linux"
	}
	var by map[string]uint64
	for r := range link.DropReason(0).Count() {
		if n := st[0].Drops[r] + st[1].Drops[r]; n > 0 {
			if by == nil {
				by = map[string]uint64{}
			}
			by[r.String()] = n
		}
	}
	var netem, down string
	if lc.Impaired() {
		netem = tc.NetemOf(lc).String()
		if lc.BtoA != nil {
			down = tc.NetemOf(*lc.BtoA).String()
		}
	}
	return Record{
		Setup: Setup{
			Workload: r.Workload, Backend: backend, Clock: c.Clock.String(),
			RTTms: Ms(c.RTT()), RateBps: lc.Rate, QueuePackets: queue, QueueBytes: queueBytes,
			DelackMs: Ms(asRun(c, backend).Link.DelayedACK), MTU: mtu, CC: string(cc), TCP: impl, Netem: netem, NetemDown: down,
			Qdisc: qdisc, QdiscDown: qdiscDown, TraceUp: traceName(lc), TraceDown: traceName(c.down()),
		},
		Outcome: Outcome{
			ElapsedMs: Ms(r.Elapsed), ModelMs: Ms(r.Model.Elapsed), ModelRoundTrips: r.Model.RoundTrips,
			Conns: r.Conns, Requests: r.Requests, Bytes: r.Bytes,
			Drops:      ptr(st[0].Drops.Total() + st[1].Drops.Total()),
			DropsBy:    by,
			Duplicated: st[0].Duplicated + st[1].Duplicated,
			Corrupted:  st[0].Corrupted + st[1].Corrupted,
			Reordered:  st[0].Reordered + st[1].Reordered,
			ECNMarked:  st[0].ECNMarked + st[1].ECNMarked,
			PeakQueue:  ptr(max(st[0].PeakQueuePackets, st[1].PeakQueuePackets)),
		},
		Detail: r.Detail,
	}
}

// traceName names a direction's trace; "" when its rate is fixed.
func traceName(d link.Config) string {
	if d.Trace == nil {
		return ""
	}
	return d.Trace.Name
}
