package link

import (
	"fmt"
	"slices"
	"time"

	"github.com/netemu/netemu/clock"
)

// Reconfigure changes the running link's per-direction parameters to
// cfg's: delay and jitter, rate and its overheads, the impairments, and
// the queue discipline. What is under way keeps its course: a packet in
// the delay line keeps its due time, one the serializer has taken keeps
// its finish; the new values apply from the next packet that reaches each
// stage. The fields that belong to the whole link (MTU, DelayedACK,
// Outages, Seed) are fixed at New: cfg must keep them. A discipline
// holding packets (codel, fq_codel, pfifo_head_drop) cannot be replaced
// until it is empty. The random draws go on from where they were.
func (l *Link) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	nc := cfg.WithDefaults()
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.cfg
	switch {
	case nc.MTU != cur.MTU:
		return fmt.Errorf("link: Reconfigure: MTU %d; the link's is %d, fixed at New", nc.MTU, cur.MTU)
	case nc.DelayedACK != cur.DelayedACK:
		return fmt.Errorf("link: Reconfigure: DelayedACK %v; the link's is %v, fixed at New", nc.DelayedACK, cur.DelayedACK)
	case nc.Seed != cur.Seed:
		return fmt.Errorf("link: Reconfigure: Seed %d; the link's is %d, fixed at New", nc.Seed, cur.Seed)
	case !slices.Equal(nc.Outages, cur.Outages):
		return fmt.Errorf("link: Reconfigure: Outages differ from the link's; add one with AddOutage")
	case l.closed:
		return fmt.Errorf("link: Reconfigure: the link is closed")
	}
	for i := range l.dirs {
		d := &l.dirs[i]
		if nd := nc.direction(d.dir); nd.Qdisc != d.cfg.Qdisc && d.qd.len() > 0 {
			return fmt.Errorf("link: Reconfigure: the %v direction's %v holds %d packets; its discipline can change once it is empty", d.dir, d.cfg.Qdisc.Kind, d.qd.len())
		}
	}
	for i := range l.dirs {
		d := &l.dirs[i]
		nd := nc.direction(d.dir)
		if nd.Qdisc != d.cfg.Qdisc {
			kind := qdiscKinds[nd.Qdisc.Kind]
			d.qd, d.ahead = kind.new(l, d, nd.Qdisc), kind.ahead
			if !d.ahead && d.serveTimer == nil {
				d.serveTimer = clock.AfterFuncQuiet(l.clk, time.Hour, func() { l.serveDue(d) })
				d.serveTimer.Stop()
			}
		}
		d.impair.reconfigure(nd)
		if nd.Trace != d.cfg.Trace {
			d.trace = nil
			if nd.Trace != nil {
				d.trace = &traceLine{t: nd.Trace}
			}
		}
		d.cfg = nd
	}
	l.cfg = nc
	return nil
}
