package raftexample

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/netemu/netemu/emutest"
)

// The mesh's round trip between any two nodes, and raft's port.
const (
	rtt  = 10 * time.Millisecond
	port = 8300
)

// A three-node raft cluster in a bubble, on an emulated mesh: the test
// partitions the leader at 10 s, checks that the other two elect a new
// leader within the bounds raft's timeouts and the round trip allow,
// heals at 30 s, and checks that by 60 s the cluster has one leader and
// the three nodes one log. raft draws its timeouts from the global
// math/rand, so the election's instant varies from run to run: the test
// logs the instants it measured.
func TestRaftPartitionAndHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := emutest.New(t, emutest.Mesh("n1", "n2", "n3"), emutest.RTT(rtt))
		c := startCluster(t, n)
		cfg := c.nodes[0].raft.ReloadableConfig()
		hb, et := cfg.HeartbeatTimeout, cfg.ElectionTimeout
		n.Run(func(ctx context.Context) {
			old := c.awaitLeader(t, nil, 10*time.Second)
			for i := range 5 {
				c.apply(t, old, fmt.Sprintf("before-%d", i))
			}

			n.At(ctx, 10*time.Second)
			partition := n.Elapsed()
			n.Partition(old.name)
			// The old leader takes an entry it can never commit: no
			// quorum hears of it, and the heal will erase it.
			lost := old.raft.Apply([]byte("lost"), 0)
			next := c.awaitLeader(t, old, time.Minute)
			elected := c.wonAt(next)

			// The bounds. A follower heard the leader last at most hb/5
			// before the partition (raft's heartbeats leave every hb/10
			// to hb/5) and at most half a round trip after it (a packet
			// already on the wire). It stands after hb without contact,
			// on a timer that fires every hb to 2hb: at the earliest hb
			// after its last contact, at the latest 3hb after it. A pre-vote
			// and a vote each take a round trip. A round of the election
			// lasts at most 2et (raft's election timer); the first may
			// fail while the other follower still has its leader, and
			// the bound allows two more lost to split votes.
			lower := partition - hb/5 + hb + 2*rtt
			upper := partition + rtt/2 + 3*hb + 4*2*et
			if elected < lower || elected > upper {
				t.Errorf("%s elected at %v; want between %v and %v", next.name, elected, lower, upper)
			}
			for i := range 5 {
				c.apply(t, next, fmt.Sprintf("during-%d", i))
			}
			if err := lost.Error(); err == nil {
				t.Errorf("the isolated leader committed an entry")
			}

			n.At(ctx, 30*time.Second)
			heal := n.Elapsed()
			n.Heal()
			agreed := c.awaitOneLog(t, 30*time.Second)
			n.At(ctx, 60*time.Second)
			c.checkOneLeaderOneLog(t)
			t.Logf("partition of %s at %v; %s elected at %v (%v later; bounds %v to %v); heal at %v; one leader and one log at %v",
				old.name, partition, next.name, elected, elected-partition, lower, upper, heal, agreed)
		})
	})
}

// cluster is the test's raft servers, one on each host of the mesh.
type cluster struct {
	n     *emutest.Net
	nodes []*node

	mu   sync.Mutex
	wins map[string][]time.Duration // each node's instants of becoming leader
	won  chan struct{}              // signalled at each win
}

// node is one raft server.
type node struct {
	name  string
	raft  *raft.Raft
	fsm   *fsm
	logs  *raft.InmemStore
	trans *raft.NetworkTransport
}

// startCluster starts a raft server on each host of n, raft's default
// configuration but its logger, bootstrapped as one cluster; the test's
// cleanup shuts them down before the network closes.
func startCluster(t *testing.T, n *emutest.Net) *cluster {
	c := &cluster{n: n, wins: map[string][]time.Duration{}, won: make(chan struct{}, 1)}
	var servers []raft.Server
	for _, h := range n.Hosts() {
		servers = append(servers, raft.Server{ID: raft.ServerID(h.Name()), Address: raft.ServerAddress(fmt.Sprintf("%s:%d", h.Name(), port))})
	}
	done := make(chan struct{})
	var watchers sync.WaitGroup
	for _, h := range n.Hosts() {
		sl, err := NewStreamLayer(h, port)
		if err != nil {
			t.Fatal(err)
		}
		cfg := raft.DefaultConfig()
		cfg.LocalID = raft.ServerID(h.Name())
		cfg.Logger = hclog.NewNullLogger()
		nd := &node{name: h.Name(), fsm: &fsm{}, logs: raft.NewInmemStore()}
		nd.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: sl, MaxPool: 3, Timeout: 2 * time.Second, Logger: cfg.Logger})
		nd.raft, err = raft.NewRaft(cfg, nd.fsm, nd.logs, nd.logs, raft.NewInmemSnapshotStore(), nd.trans)
		if err != nil {
			t.Fatal(err)
		}
		if err := nd.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			t.Fatal(err)
		}
		obs := make(chan raft.Observation, 16)
		nd.raft.RegisterObserver(raft.NewObserver(obs, false, func(o *raft.Observation) bool {
			_, ok := o.Data.(raft.LeaderObservation)
			return ok
		}))
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			c.watch(nd, obs, done)
		}()
		c.nodes = append(c.nodes, nd)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			nd.raft.Shutdown().Error()
			nd.trans.Close()
		}
		close(done)
		watchers.Wait()
	})
	return c
}

// watch records the instants nd becomes leader, as raft tells its
// observers, until done.
func (c *cluster) watch(nd *node, obs <-chan raft.Observation, done <-chan struct{}) {
	for {
		select {
		case o := <-obs:
			if string(o.Data.(raft.LeaderObservation).LeaderID) != nd.name {
				continue
			}
			c.mu.Lock()
			c.wins[nd.name] = append(c.wins[nd.name], c.n.Elapsed())
			c.mu.Unlock()
			select {
			case c.won <- struct{}{}:
			default:
			}
		case <-done:
			return
		}
	}
}

// wonAt is the instant nd last became leader.
func (c *cluster) wonAt(nd *node) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.wins[nd.name]
	return w[len(w)-1]
}

// awaitLeader returns the first node other than not that is leader,
// waiting up to wait of the bubble's time.
func (c *cluster) awaitLeader(t *testing.T, not *node, wait time.Duration) *node {
	t.Helper()
	timeout := time.After(wait)
	for {
		for _, nd := range c.nodes {
			if nd != not && nd.raft.State() == raft.Leader {
				return nd
			}
		}
		select {
		case <-c.won:
		case <-timeout:
			t.Fatalf("no leader within %v", wait)
		}
	}
}

// apply commits cmd through leader nd.
func (c *cluster) apply(t *testing.T, nd *node, cmd string) {
	t.Helper()
	if err := nd.raft.Apply([]byte(cmd), time.Second).Error(); err != nil {
		t.Fatalf("apply %q on %s: %v", cmd, nd.name, err)
	}
}

// awaitOneLog waits, looking every 10 ms, until the nodes agree on one
// leader and hold one log, and returns the instant they did.
func (c *cluster) awaitOneLog(t *testing.T, wait time.Duration) time.Duration {
	t.Helper()
	for start := c.n.Elapsed(); c.n.Elapsed()-start < wait; time.Sleep(10 * time.Millisecond) {
		if c.oneLeaderOneLog() == "" {
			return c.n.Elapsed()
		}
	}
	t.Fatalf("no agreement within %v: %s", wait, c.oneLeaderOneLog())
	return 0
}

// checkOneLeaderOneLog fails the test unless the nodes agree.
func (c *cluster) checkOneLeaderOneLog(t *testing.T) {
	t.Helper()
	if why := c.oneLeaderOneLog(); why != "" {
		t.Error(why)
	}
	for _, nd := range c.nodes {
		if slices.Contains(nd.fsm.commands(), "lost") {
			t.Errorf("%s applied the entry the isolated leader took", nd.name)
		}
	}
}

// oneLeaderOneLog says how the nodes disagree: "" when one is leader,
// all three name it, and their logs and applied commands are the same.
func (c *cluster) oneLeaderOneLog() string {
	var leaders []string
	for _, nd := range c.nodes {
		if nd.raft.State() == raft.Leader {
			leaders = append(leaders, nd.name)
		}
	}
	if len(leaders) != 1 {
		return fmt.Sprintf("leaders %v; want one", leaders)
	}
	first := c.nodes[0]
	for _, nd := range c.nodes {
		if _, id := nd.raft.LeaderWithID(); string(id) != leaders[0] {
			return fmt.Sprintf("%s names %q as leader; %s is", nd.name, id, leaders[0])
		}
		if a, b := logOf(first), logOf(nd); a != b {
			return fmt.Sprintf("the logs of %s and %s differ:\n%s\n%s", first.name, nd.name, a, b)
		}
		if a, b := first.fsm.commands(), nd.fsm.commands(); !slices.Equal(a, b) {
			return fmt.Sprintf("%s applied %q, %s %q", first.name, a, nd.name, b)
		}
	}
	return ""
}

// logOf words nd's whole log: index, term, type and data of each entry.
func logOf(nd *node) string {
	last, _ := nd.logs.LastIndex()
	var b strings.Builder
	for i := uint64(1); i <= last; i++ {
		var l raft.Log
		if err := nd.logs.GetLog(i, &l); err != nil {
			fmt.Fprintf(&b, "%d: %v\n", i, err)
			continue
		}
		fmt.Fprintf(&b, "%d/%d %v %q\n", l.Index, l.Term, l.Type, l.Data)
	}
	return b.String()
}

// fsm is the replicated state: the commands applied, in order.
type fsm struct {
	mu      sync.Mutex
	applied []string
}

func (f *fsm) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, string(l.Data))
	return nil
}

func (f *fsm) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.applied)
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) { return snapshot(f.commands()), nil }

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = nil
	if len(b) > 0 {
		f.applied = strings.Split(string(b), "\n")
	}
	return nil
}

// snapshot is the fsm's commands, one a line.
type snapshot []string

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := io.WriteString(sink, strings.Join(s, "\n")); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshot) Release() {}
