//go:build linux

package kernel

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// netem's netlink attributes that nl does not name (linux/pkt_sched.h).
const (
	tcaNetemLatency64 = 10 // TCA_NETEM_LATENCY64: s64 nanoseconds
	tcaNetemJitter64  = 11 // TCA_NETEM_JITTER64: s64 nanoseconds
	tcaNetemPrngSeed  = 14 // TCA_NETEM_PRNG_SEED: u64

	netemLossGI = 1 // NETEM_LOSS_GI: struct tc_netem_gimodel, in TCA_NETEM_LOSS
	netemLossGE = 2 // NETEM_LOSS_GE: struct tc_netem_gemodel, in TCA_NETEM_LOSS
)

// netemSeedBtoA is mixed into the run's seed for the server's qdisc, so
// that the two directions draw different sequences, as the link's do.
const netemSeedBtoA = 0x9e3779b97f4a7c15

// netemSpec is the netem qdisc of one side's egress. The embedded Netem
// holds what netlink's Netem type covers, with its meaning there: Latency
// and Jitter in ticks as tc 6.1 fills them, probabilities scaled to
// [0, MaxUint32], Rate64 in bytes per second. The other fields are netem's
// options that type lacks.
type netemSpec struct {
	netlink.Netem

	// Latency64 and Jitter64 are the delay and jitter in nanoseconds,
	// sent when not zero; the kernel (4.15 on) prefers them to the ticks.
	Latency64, Jitter64 int64

	// At most one of GI and GE is set: netem's 4-state and
	// Gilbert-Elliott loss models (TCA_NETEM_LOSS).
	GI *netemGI
	GE *netemGE

	// PacketOverhead, CellSize and CellOverhead complete TCA_NETEM_RATE.
	PacketOverhead int32
	CellSize       uint32
	CellOverhead   int32

	// Dist is the jitter's distribution table (TCA_NETEM_DELAY_DIST); nil
	// for uniform.
	Dist []int16

	// Seed seeds netem's own random decisions (TCA_NETEM_PRNG_SEED);
	// always sent. Kernels before 6.6 ignore it.
	Seed uint64
}

// netemGI is struct tc_netem_gimodel.
type netemGI struct{ P13, P31, P32, P14, P23 uint32 }

// netemGE is struct tc_netem_gemodel. H is tc's h, the complement of the
// 1-h (BadLoss) it reads.
type netemGE struct{ P, R, H, K1 uint32 }

// netemDirection returns the parameters of the qdisc on the egress of
// dir's sender: the client's for AtoB, the server's for BtoA (c.BtoA when
// set). Seed is the seed that qdisc's decisions draw from: the run's for
// AtoB, mixed with netemSeedBtoA for BtoA.
func netemDirection(c link.Config, dir link.Dir) link.Config {
	d := c
	if dir == link.BtoA {
		if c.BtoA != nil {
			d = *c.BtoA
		}
		d.Seed = c.Seed ^ netemSeedBtoA
	}
	d.MTU, d.DelayedACK, d.Outages, d.BtoA = c.MTU, c.DelayedACK, c.Outages, nil
	return d
}

// netemUnmappable reports the options of c that netem cannot express, in
// one error wrapping ErrUnsupported that names each; nil if there are
// none. MTU is the veth's and DelayedACK is ignored in kernel mode.
func netemUnmappable(c link.Config) error {
	var opts []string
	if len(c.Outages) > 0 {
		opts = append(opts, "Outages (netem has no outages)")
	}
	if !c.Noise.IsZero() {
		opts = append(opts, "Noise (a node's time to take each packet in, kept in order: netem's jitter is another thing)")
	}
	side := func(where string, d link.Config) {
		if d.Trace != nil {
			opts = append(opts, where+"Trace (netem has no time-varying rate)")
		}
		if d.Qdisc.LimitBytes > 0 {
			opts = append(opts, where+"Qdisc.LimitBytes (a queue limit in bytes; netem's counts packets)")
		}
		if !d.Qdisc.IsFIFO() {
			opts = append(opts, where+"Qdisc "+tc.Qdisc(d.Qdisc).String()+" (the netem path is one netem qdisc per direction, with no other discipline under it)")
		}
		// With a rate netem keeps jittered packets in order by itself;
		// without one it lets jitter reorder them.
		if d.KeepOrder && d.Jitter > 0 && d.Rate == 0 {
			opts = append(opts, where+"KeepOrder without a Rate (netem keeps jittered packets in order only with a rate)")
		}
	}
	side("", c)
	if c.BtoA != nil {
		side("BtoA.", *c.BtoA)
	}
	if len(opts) == 0 {
		return nil
	}
	return fmt.Errorf("%w: --link netem: netem cannot express %s; use --link tun (netemu's own link through TUN devices)", ErrUnsupported, strings.Join(opts, ", "))
}

// linkVia decides how New joins the namespaces. Auto takes netem where
// the kernel has it (available) and netem expresses every option of c,
// else TUN; Netem fails, wrapping ErrUnsupported, when either is missing.
func linkVia(via Via, c link.Config, available func() (bool, error)) (Via, error) {
	unmappable := netemUnmappable(c)
	switch via {
	case "", Auto:
		if unmappable == nil {
			if ok, _ := available(); ok {
				return Netem, nil
			}
		}
		return TUN, nil
	case Netem:
		if unmappable != nil {
			return "", unmappable
		}
		if ok, why := available(); !ok {
			return "", fmt.Errorf("%w: --link netem: this kernel has no sch_netem (%v); use --link tun (netemu's own link through TUN devices) or auto", ErrUnsupported, why)
		}
	}
	return via, nil
}

// netemQdisc maps one direction's parameters (see netemDirection) to the
// netem qdisc on the device with index linkIndex, option by option as tc
// maps its own: limit, delay and jitter with their correlation and
// distribution, loss (random, state, gemodel), duplicate, corrupt,
// reorder and gap, rate with its overheads, and the seed. It assumes
// netemUnmappable(c) is nil. netem counts its limit in packets, delayed
// ones included.
func netemQdisc(linkIndex int, c link.Config) *netemSpec {
	q := &netemSpec{Netem: netlink.Netem{
		QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: linkIndex,
			Handle:    netlink.MakeHandle(1, 0),
			Parent:    netlink.HANDLE_ROOT,
		},
		Limit:         uint32(min(uint64(c.WithDefaults().Qdisc.Limit), math.MaxUint32)),
		Latency:       netemTicks(c.Delay.Nanoseconds()),
		Jitter:        netemTicks(c.Jitter.Nanoseconds()),
		DelayCorr:     netemScaled(c.JitterCorr),
		Duplicate:     netemScaled(c.Duplicate.P),
		DuplicateCorr: netemScaled(c.Duplicate.Corr),
		CorruptProb:   netemScaled(c.Corrupt.P),
		CorruptCorr:   netemScaled(c.Corrupt.Corr),
		ReorderProb:   netemScaled(c.Reorder.P),
		ReorderCorr:   netemScaled(c.Reorder.Corr),
		Rate64:        bytesPerSecond(c.Rate),
	},
		Latency64:      c.Delay.Nanoseconds(),
		Jitter64:       c.Jitter.Nanoseconds(),
		PacketOverhead: int32(c.PacketOverhead),
		CellSize:       uint32(min(uint64(c.CellSize), math.MaxUint32)),
		CellOverhead:   int32(c.CellOverhead),
		Seed:           c.Seed,
	}
	// The kernel takes a gap without TCA_NETEM_REORDER as reorder 100%.
	if q.ReorderProb > 0 {
		q.Gap = uint32(min(uint64(max(c.ReorderGap, 1)), math.MaxUint32))
	}
	if c.Jitter > 0 {
		q.Dist = c.Distribution.Table() // nil for uniform
	}
	switch l := c.Loss; l.Model {
	case link.LossRandom:
		q.Loss, q.LossCorr = netemScaled(l.P), netemScaled(l.Corr)
	case link.LossState:
		q.GI = &netemGI{P13: netemScaled(l.P13), P31: netemScaled(l.P31), P32: netemScaled(l.P32), P14: netemScaled(l.P14), P23: netemScaled(l.P23)}
	case link.LossGE:
		q.GE = &netemGE{P: netemScaled(l.GoodToBad), R: netemScaled(l.BadToGood), H: math.MaxUint32 - netemScaled(l.BadLoss), K1: netemScaled(l.GoodLoss)}
	}
	return q
}

// netemScaled is a fraction on netem's scale, as tc's set_percent makes
// it: rint(p × UINT32_MAX).
func netemScaled(p float64) uint32 {
	return uint32(math.RoundToEven(p * math.MaxUint32))
}

// bytesPerSecond is a rate in bits per second as tc's get_rate64 makes
// it: bytes per second, truncated, at most MaxUint64.
func bytesPerSecond(bits float64) uint64 {
	if b := bits / 8; b < 1<<64 {
		return uint64(b)
	}
	return math.MaxUint64
}

// netemTicks is tc 6.1's tc_netem_qopt time: whole microseconds, then
// psched ticks (tc_core_time2tick, truncated), at most MaxUint32 where tc
// would refuse the time; the 64-bit attributes carry it exactly.
func netemTicks(ns int64) uint32 {
	return uint32(min(float64(ns/1000)*netlink.TickInUsec(), math.MaxUint32))
}

// request is the RTM_NEWQDISC message that adds q, as "tc qdisc add dev
// DEV root handle 1: netem ..." sends it. The parts netlink's Netem type
// covers are encoded as its QdiscAdd encodes them; the options follow
// tc's order.
func (q *netemSpec) request() *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(&nl.TcMsg{
		Family:  nl.FAMILY_ALL,
		Ifindex: int32(q.LinkIndex),
		Handle:  q.Handle,
		Parent:  q.Parent,
	})
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated(q.Type())))

	qopt := nl.TcNetemQopt{
		Latency:   q.Latency,
		Limit:     q.Limit,
		Loss:      q.Loss,
		Gap:       q.Gap,
		Duplicate: q.Duplicate,
		Jitter:    q.Jitter,
	}
	opts := nl.NewRtAttr(nl.TCA_OPTIONS, qopt.Serialize())
	if q.Latency64 != 0 {
		opts.AddRtAttr(tcaNetemLatency64, nl.Uint64Attr(uint64(q.Latency64)))
	}
	if q.Jitter64 != 0 {
		opts.AddRtAttr(tcaNetemJitter64, nl.Uint64Attr(uint64(q.Jitter64)))
	}
	if q.DelayCorr > 0 || q.LossCorr > 0 || q.DuplicateCorr > 0 {
		corr := nl.TcNetemCorr{DelayCorr: q.DelayCorr, LossCorr: q.LossCorr, DupCorr: q.DuplicateCorr}
		opts.AddRtAttr(nl.TCA_NETEM_CORR, corr.Serialize())
	}
	if q.ReorderProb > 0 {
		reorder := nl.TcNetemReorder{Probability: q.ReorderProb, Correlation: q.ReorderCorr}
		opts.AddRtAttr(nl.TCA_NETEM_REORDER, reorder.Serialize())
	}
	if q.CorruptProb > 0 {
		corrupt := nl.TcNetemCorrupt{Probability: q.CorruptProb, Correlation: q.CorruptCorr}
		opts.AddRtAttr(nl.TCA_NETEM_CORRUPT, corrupt.Serialize())
	}
	switch {
	case q.GI != nil:
		loss := opts.AddRtAttr(int(nl.TCA_NETEM_LOSS|nl.NLA_F_NESTED), nil)
		loss.AddRtAttr(netemLossGI, u32s(q.GI.P13, q.GI.P31, q.GI.P32, q.GI.P14, q.GI.P23))
	case q.GE != nil:
		loss := opts.AddRtAttr(int(nl.TCA_NETEM_LOSS|nl.NLA_F_NESTED), nil)
		loss.AddRtAttr(netemLossGE, u32s(q.GE.P, q.GE.R, q.GE.H, q.GE.K1))
	}
	if q.Rate64 > 0 {
		rate := nl.TcNetemRate{Rate: uint32(q.Rate64), PacketOverhead: q.PacketOverhead, CellSize: q.CellSize, CellOverhead: q.CellOverhead}
		if q.Rate64 >= 1<<32 {
			opts.AddRtAttr(nl.TCA_NETEM_RATE64, nl.Uint64Attr(q.Rate64))
			rate.Rate = math.MaxUint32
		}
		opts.AddRtAttr(nl.TCA_NETEM_RATE, rate.Serialize())
	}
	opts.AddRtAttr(tcaNetemPrngSeed, nl.Uint64Attr(q.Seed))
	if q.Dist != nil {
		b := make([]byte, 0, 2*len(q.Dist))
		for _, v := range q.Dist {
			b = binary.NativeEndian.AppendUint16(b, uint16(v))
		}
		opts.AddRtAttr(nl.TCA_NETEM_DELAY_DIST, b)
	}
	req.AddData(opts)
	return req
}

// u32s lays out a C struct of __u32 fields.
func u32s(v ...uint32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.NativeEndian.AppendUint32(b, x)
	}
	return b
}

// addNetem adds q in namespace ns.
func addNetem(ns *namespace, q *netemSpec) error {
	return ns.do(func() error {
		_, err := q.request().Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
}

var netemProbe struct {
	once sync.Once
	ok   bool
	why  error
}

// netemAvailable reports whether the kernel has sch_netem, by adding a
// netem qdisc to the loopback device of a scratch namespace.
func netemAvailable() (bool, error) {
	netemProbe.once.Do(func() {
		ns, err := newNamespace()
		if err != nil {
			netemProbe.why = err
			return
		}
		defer ns.close()
		h, err := handle(ns)
		if err != nil {
			netemProbe.why = err
			return
		}
		defer h.Close()
		l, err := h.LinkByName("lo") // every namespace has one
		if err != nil {
			netemProbe.why = err
			return
		}
		if err := addNetem(ns, netemQdisc(l.Attrs().Index, link.Config{})); err != nil {
			netemProbe.why = fmt.Errorf("add netem qdisc: %w", err)
			return
		}
		netemProbe.ok = true
	})
	return netemProbe.ok, netemProbe.why
}

// setupNetem joins the namespaces with a veth pair shaped by netem on
// each side's egress: the client's carries A→B, the server's B→A.
// Offloads are off so that netem sees wire-sized packets.
func (n *Net) setupNetem() error {
	if err := netemUnmappable(n.cfg.Link); err != nil {
		return err
	}
	h, err := handle(n.client)
	if err != nil {
		return err
	}
	defer h.Close()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: devName},
		PeerName:      devName,
		PeerNamespace: netlink.NsFd(n.server.fd),
	}
	if err := h.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth pair: %w", err)
	}
	if err := n.address(n.client, ClientAddr, ServerAddr); err != nil {
		return err
	}
	if err := n.address(n.server, ServerAddr, ClientAddr); err != nil {
		return err
	}
	for i, ns := range []*namespace{n.client, n.server} {
		if err := ns.do(func() error { return offloadsOff(devName) }); err != nil {
			return err
		}
		hh, l, err := device(ns)
		if err == nil {
			hh.Close()
			err = addNetem(ns, netemQdisc(l.Attrs().Index, netemDirection(n.cfg.Link, link.Dir(i))))
		}
		if err != nil {
			return fmt.Errorf("add netem qdisc (%v): %w", link.Dir(i), err)
		}
	}
	return nil
}

// offloadsOff turns off TSO, GSO and GRO on a device of the calling
// thread's namespace (ethtool's legacy set commands).
func offloadsOff(dev string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for _, cmd := range []uint32{unix.ETHTOOL_STSO, unix.ETHTOOL_SGSO, unix.ETHTOOL_SGRO} {
		value := struct{ cmd, data uint32 }{cmd: cmd}
		var req struct {
			name [unix.IFNAMSIZ]byte
			data uintptr
			_    [16]byte
		}
		copy(req.name[:], dev)
		req.data = uintptr(unsafe.Pointer(&value))
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req))); errno != 0 && errno != unix.EOPNOTSUPP {
			return fmt.Errorf("ethtool %#x off on %s: %w", cmd, dev, errno)
		}
	}
	return nil
}
