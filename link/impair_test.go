package link

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// binomial99 is the 99.9 % interval (normal approximation, z = 3.29) of
// the number of successes in n trials of probability p.
func binomial99(n int, p float64) (lo, hi float64) {
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return float64(n)*p - 3.29*sd, float64(n)*p + 3.29*sd
}

func lossRate(l Loss, n int, seed uint64) (lost int, bursts []int) {
	r := newRand(seed, AtoB)
	s := newLoss(l, r)
	run := 0
	for range n {
		if s.lost(r) {
			lost++
			run++
		} else if run > 0 {
			bursts = append(bursts, run)
			run = 0
		}
	}
	return lost, bursts
}

// Random loss: the fraction lost over 10⁶ packets falls in the binomial
// 99.9 % interval, for several rates and seeds.
func TestRandomLossRate(t *testing.T) {
	const n = 1_000_000
	for _, p := range []float64{0.001, 0.01, 0.03, 0.5} {
		for seed := uint64(1); seed <= 3; seed++ {
			lost, _ := lossRate(RandomLoss(p, 0), n, seed)
			if lo, hi := binomial99(n, p); float64(lost) < lo || float64(lost) > hi {
				t.Errorf("loss %v%%, seed %d: %d of %d lost; want %.0f to %.0f", p*100, seed, lost, n, lo, hi)
			}
		}
	}
}

// Correlation keeps the mean and lengthens the bursts: netem's correlated
// generator is a weighted mean of uniform values, so the loss rate moves
// toward 50 % but stays near p for small correlations; the bursts grow.
func TestCorrelatedLossBursts(t *testing.T) {
	const n = 1_000_000
	_, plain := lossRate(RandomLoss(0.05, 0), n, 1)
	_, corr := lossRate(RandomLoss(0.05, 0.75), n, 1)
	mean := func(b []int) float64 {
		s := 0
		for _, v := range b {
			s += v
		}
		return float64(s) / float64(len(b))
	}
	if mean(corr) < 1.5*mean(plain) {
		t.Errorf("mean burst: %.2f with 75%% correlation, %.2f without; want correlation to lengthen bursts", mean(corr), mean(plain))
	}
}

// Gilbert-Elliott with a bad state that always loses and a good state
// that never does: bursts are geometric with mean 1/r, and the loss rate
// is the bad state's stationary share p/(p+r).
func TestGilbertElliott(t *testing.T) {
	const n = 2_000_000
	for _, c := range []struct{ p, r float64 }{{0.01, 0.3}, {0.05, 0.5}, {0.001, 0.1}} {
		lost, bursts := lossRate(GELoss(c.p, c.r), n, 7)
		var sum float64
		for _, b := range bursts {
			sum += float64(b)
		}
		m := sum / float64(len(bursts))
		// Bursts are geometric: sd = sqrt(1-r)/r; the mean of k of them has
		// sd/√k.
		sd := math.Sqrt(1-c.r) / c.r / math.Sqrt(float64(len(bursts)))
		if math.Abs(m-1/c.r) > 3.29*sd {
			t.Errorf("gemodel %v %v: mean burst %.3f over %d bursts; want 1/r = %.3f ± %.3f", c.p, c.r, m, len(bursts), 1/c.r, 3.29*sd)
		}
		want := c.p / (c.p + c.r)
		if got := float64(lost) / n; math.Abs(got-want)/want > 0.05 {
			t.Errorf("gemodel %v %v: loss rate %.5f; want p/(p+r) = %.5f within 5 %%", c.p, c.r, got, want)
		}
	}
}

// stationaryLoss is the 4-state model's long-run loss rate: the share of
// packets whose transition lands in state 3 or 4, from the chain's
// stationary distribution (power iteration).
func stationaryLoss(p13, p31, p32, p23, p14 float64) float64 {
	P := [4][4]float64{
		{1 - p13 - p14, 0, p13, p14},
		{0, 1 - p23, p23, 0},
		{p31, p32, 1 - p31 - p32, 0},
		{1, 0, 0, 0},
	}
	pi := [4]float64{1, 0, 0, 0}
	for range 100000 {
		var next [4]float64
		for i := range 4 {
			for j := range 4 {
				next[j] += pi[i] * P[i][j]
			}
		}
		pi = next
	}
	return pi[2] + pi[3]
}

// The 4-state model's loss rate is its chain's stationary loss rate,
// within the interval of the trials.
func TestStateLossStationary(t *testing.T) {
	const n = 2_000_000
	for _, c := range [][5]float64{
		{0.01, 0.3, 0.1, 0.2, 0.005},
		{0.05, 0.5, 0, 1, 0},
		{0.002, 0.9, 0.05, 0.5, 0.01},
	} {
		want := stationaryLoss(c[0], c[1], c[2], c[3], c[4])
		lost, _ := lossRate(StateLoss(c[:]...), n, 3)
		// Losses are correlated: allow the interval of n/10 independent
		// trials, a looser bound that still fails on a wrong model.
		lo, hi := binomial99(n/10, want)
		if got := float64(lost) / 10; got < lo || got > hi {
			t.Errorf("state %v: %d of %d lost (%.5f); want the stationary %.5f", c, lost, n, float64(lost)/n, want)
		}
	}
}

// Small seeded cases, exact: deterministic chains give exact patterns.
func TestLossExactSequences(t *testing.T) {
	seq := func(l Loss, n int) string {
		r := newRand(1, AtoB)
		s := newLoss(l, r)
		var b []byte
		for range n {
			if s.lost(r) {
				b = append(b, 'x')
			} else {
				b = append(b, '.')
			}
		}
		return string(b)
	}
	for _, c := range []struct {
		name string
		l    Loss
		want string
	}{
		{"no loss", RandomLoss(0, 0), "............"},
		{"all lost", RandomLoss(1, 0), "xxxxxxxxxxxx"},
		// p13 = 1 and p31 = 1: lost in a burst, then back to the gap.
		{"state alternate", StateLoss(1, 1), "x.x.x.x.x.x."},
		// p14 = 1: isolated losses, each followed by a sent packet.
		{"state isolated", StateLoss(0, 0, 0, 0, 1), "x.x.x.x.x.x."},
		// gemodel p = 1, r = 0: good once (the packet is judged in its old
		// state), then bad for ever.
		{"gemodel stuck bad", GELoss(1, 0), ".xxxxxxxxxxx"},
		// p = 1, r = 1: the state flips every packet.
		{"gemodel flip", GELoss(1, 1), ".x.x.x.x.x.x"},
	} {
		if got := seq(c.l, len(c.want)); got != c.want {
			t.Errorf("%s: %s; want %s", c.name, got, c.want)
		}
	}
}

// Jitter: for each distribution, the mean and standard deviation of the
// delays are those the table defines (uniform: ±Jitter, sd Jitter/√3),
// within the sampling error of 2×10⁵ draws.
func TestJitterMoments(t *testing.T) {
	const (
		mu    = 50 * time.Millisecond
		sigma = 10 * time.Millisecond
		n     = 200_000
	)
	for _, d := range Distributions {
		wantMean, wantSD := float64(mu), float64(sigma)/math.Sqrt(3)
		if tab := d.table(); tab != nil {
			var s, s2 float64
			for _, v := range tab {
				x := float64(v) / distScale * float64(sigma)
				s += x
				s2 += x * x
			}
			m := s / float64(len(tab))
			wantMean, wantSD = float64(mu)+m, math.Sqrt(s2/float64(len(tab))-m*m)
		}
		im := newImpairments(Config{Jitter: sigma, Distribution: d, Seed: 5}, AtoB)
		var s, s2 float64
		for range n {
			x := float64(im.delay(mu))
			s += x
			s2 += x * x
		}
		mean := s / n
		sd := math.Sqrt(s2/n - mean*mean)
		if se := wantSD / math.Sqrt(n); math.Abs(mean-wantMean) > 4*se {
			t.Errorf("%s: mean delay %v; want %v ± %v", d, time.Duration(mean), time.Duration(wantMean), time.Duration(4*se))
		}
		if math.Abs(sd-wantSD)/wantSD > 0.02 {
			t.Errorf("%s: standard deviation %v; want %v within 2 %%", d, time.Duration(sd), time.Duration(wantSD))
		}
		if d == Normal && math.Abs(sd-float64(sigma))/float64(sigma) > 0.02 {
			t.Errorf("normal: standard deviation %v; want the jitter, %v", time.Duration(sd), sigma)
		}
	}
}

// Uniform jitter stays within ±Jitter.
func TestUniformJitterBounds(t *testing.T) {
	im := newImpairments(Config{Jitter: time.Millisecond, Seed: 9}, AtoB)
	for range 100000 {
		if d := im.delay(10 * time.Millisecond); d < 9*time.Millisecond || d >= 11*time.Millisecond {
			t.Fatalf("uniform delay %v outside [9ms, 11ms)", d)
		}
	}
}

// udp builds a numbered UDP packet; the number identifies it on arrival.
func udp(i int) []byte {
	b := rawPkt(100)
	binary.BigEndian.PutUint32(b[28:], uint32(i))
	return b
}

func number(b []byte) int { return int(binary.BigEndian.Uint32(b[28:])) }

// sendEvery sends n numbered packets on a>b, one every gap.
func sendEvery(r *rig, n int, gap time.Duration) {
	for i := range n {
		r.at(time.Duration(i)*gap, func() { r.l.Send(AtoB, udp(i)) })
	}
}

// Duplicate and reorder through the link: the fractions of 10⁵ packets
// fall in their binomial intervals, and the counters agree with what
// arrived.
func TestDuplicateAndReorderFractions(t *testing.T) {
	const n = 100_000
	r := newRig(t, Config{Delay: 10 * time.Millisecond, Duplicate: Chance{P: 0.05}, Reorder: Chance{P: 0.1}, Seed: 3})
	sendEvery(r, n, 100*time.Microsecond)
	r.run(time.Duration(n)*100*time.Microsecond + time.Second)
	st := r.l.Stats()[AtoB]
	got := r.arrivals()
	if len(got) != n+int(st.Duplicated) || st.Packets != uint64(len(got)) {
		t.Fatalf("%d arrivals, %d duplicated, %d counted delivered; want n + duplicates", len(got), st.Duplicated, st.Packets)
	}
	if lo, hi := binomial99(n, 0.05); float64(st.Duplicated) < lo || float64(st.Duplicated) > hi {
		t.Errorf("%d of %d duplicated; want %.0f to %.0f", st.Duplicated, n, lo, hi)
	}
	// Every packet (copies included) meets the reorder stage.
	if lo, hi := binomial99(len(got), 0.1); float64(st.Reordered) < lo || float64(st.Reordered) > hi {
		t.Errorf("%d of %d reordered; want %.0f to %.0f", st.Reordered, len(got), lo, hi)
	}
	// A reordered packet arrives at once, so it overtakes the packets sent
	// in the 10 ms before it.
	overtakes := 0
	for i := 1; i < len(got); i++ {
		if number(got[i].b) < number(got[i-1].b) {
			overtakes++
		}
	}
	if overtakes == 0 {
		t.Error("no packet arrived out of order")
	}
}

// Corruption flips exactly one bit of each corrupted packet, and the
// counter says how many.
func TestCorruptFlipsOneBit(t *testing.T) {
	const n = 20_000
	r := newRig(t, Config{Delay: time.Millisecond, Corrupt: Chance{P: 0.2}, Seed: 11})
	sendEvery(r, n, 10*time.Microsecond)
	r.run(time.Second)
	flipped := 0
	for _, a := range r.arrivals() {
		want := udp(0)
		diff := 0
		for i := range a.b {
			if i >= 28 && i < 32 {
				continue // the packet's number
			}
			diff += bitsSet(a.b[i] ^ want[i])
		}
		if diff > 1 {
			t.Fatalf("a packet arrived with %d bits changed; corruption flips one", diff)
		}
		flipped += diff
	}
	st := r.l.Stats()[AtoB]
	// A flip in the number's bytes is not seen here: allow for those.
	if uint64(flipped) > st.Corrupted || float64(flipped) < 0.9*float64(st.Corrupted) {
		t.Errorf("%d packets seen corrupted, %d counted", flipped, st.Corrupted)
	}
	if lo, hi := binomial99(n, 0.2); float64(st.Corrupted) < lo || float64(st.Corrupted) > hi {
		t.Errorf("%d of %d corrupted; want %.0f to %.0f", st.Corrupted, n, lo, hi)
	}
}

func bitsSet(b byte) int {
	n := 0
	for ; b != 0; b &= b - 1 {
		n++
	}
	return n
}

// Jitter larger than the spacing reorders packets; KeepOrder keeps them in
// order, each waiting for the one before.
func TestJitterReordersUnlessKeepOrder(t *testing.T) {
	for _, keep := range []bool{false, true} {
		r := newRig(t, Config{Delay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond, KeepOrder: keep, Seed: 2})
		sendEvery(r, 1000, time.Millisecond)
		r.run(3 * time.Second)
		got := r.arrivals()
		out := 0
		for i := 1; i < len(got); i++ {
			if number(got[i].b) < number(got[i-1].b) {
				out++
			}
			if got[i].at < got[i-1].at {
				t.Fatalf("arrivals out of time order: %v after %v", got[i].at, got[i-1].at)
			}
		}
		if len(got) != 1000 || keep && out != 0 || !keep && out < 100 {
			t.Errorf("KeepOrder %v: %d packets, %d out of order", keep, len(got), out)
		}
	}
}

// netem's rate options: overhead and cells change the serialization time
// exactly as packet_time_ns computes it.
func TestRateOverheadAndCells(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want time.Duration // for a 100-byte packet at 1 mbit
	}{
		{Config{Rate: 1e6}, 800 * time.Microsecond},
		{Config{Rate: 1e6, PacketOverhead: 14}, 912 * time.Microsecond},
		{Config{Rate: 1e6, PacketOverhead: -20}, 640 * time.Microsecond},
		// ATM: 100 bytes are 3 cells of 48, each 53 on the wire.
		{Config{Rate: 1e6, CellSize: 48, CellOverhead: 5}, 3 * 53 * 8 * time.Microsecond},
		{Config{Rate: 1e6, PacketOverhead: 44, CellSize: 48, CellOverhead: 5}, 3 * 53 * 8 * time.Microsecond},
		{Config{Rate: 1e6, PacketOverhead: 45, CellSize: 48, CellOverhead: 5}, 4 * 53 * 8 * time.Microsecond},
	} {
		r := newRig(t, c.cfg)
		r.at(0, func() { r.l.Send(AtoB, rawPkt(100)) })
		r.run(time.Second)
		if got := r.arrivals(); len(got) != 1 || got[0].at != c.want {
			t.Errorf("%+v: arrived %v; want %v", c.cfg, got, c.want)
		}
	}
}

// Asymmetric links: B→A has its own rate, delay and loss.
func TestAsymmetric(t *testing.T) {
	r := newRig(t, Config{Rate: 1e6, Delay: 5 * time.Millisecond, BtoA: &Config{Rate: 8e6, Delay: 20 * time.Millisecond, Loss: RandomLoss(1, 0)}})
	r.at(0, func() {
		r.l.Send(AtoB, rawPkt(1000))
		r.l.Send(BtoA, rawPkt(1000))
	})
	r.run(time.Second)
	got := r.arrivals()
	if len(got) != 1 || got[0].dir != AtoB || got[0].at != 13*time.Millisecond {
		t.Errorf("arrivals %+v; want only a>b, at 8ms + 5ms", got)
	}
	r2 := newRig(t, Config{Rate: 1e6, Delay: 5 * time.Millisecond, BtoA: &Config{Rate: 8e6, Delay: 20 * time.Millisecond}})
	r2.at(0, func() { r2.l.Send(BtoA, rawPkt(1000)) })
	r2.run(time.Second)
	if got := r2.arrivals(); len(got) != 1 || got[0].at != 21*time.Millisecond {
		t.Errorf("b>a arrivals %+v; want one at 1ms + 20ms", got)
	}
}

// The same seed gives the same decisions, a different seed others.
func TestImpairmentsSeeded(t *testing.T) {
	run := func(seed uint64) []byte {
		r := newRig(t, Config{Delay: 5 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: RandomLoss(0.1, 0.2), Duplicate: Chance{P: 0.05}, Reorder: Chance{P: 0.05}, Corrupt: Chance{P: 0.05}, Seed: seed})
		sendEvery(r, 2000, 200*time.Microsecond)
		r.run(2 * time.Second)
		var out []byte
		for _, a := range r.arrivals() {
			out = binary.BigEndian.AppendUint64(out, uint64(a.at))
			out = append(out, a.b...)
		}
		return out
	}
	a, b, c := run(1), run(1), run(2)
	if !bytes.Equal(a, b) {
		t.Error("two runs with seed 1 differ")
	}
	if bytes.Equal(a, c) {
		t.Error("seeds 1 and 2 gave the same arrivals")
	}
}

// crandom with correlation 0 is the generator itself.
func TestCrandomUncorrelated(t *testing.T) {
	r1, r2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	c := newCrandom(0, r1)
	r2.Uint32()
	for range 100 {
		if a, b := c.next(r1), r2.Uint32(); a != b {
			t.Fatalf("uncorrelated crandom %d, generator %d", a, b)
		}
	}
}

// netem's correlated loss draws a weighted mean of uniform values, whose
// spread shrinks with the correlation, so fewer draws fall under P than P
// says: 8 % with 10 % correlation loses about 3.5 %, and 1 % with 25 %
// correlation almost nothing. netemu does what netem does;
// docs/LINK.md says so and points to the Markov models for bursty loss.
func TestCorrelatedLossIsNetems(t *testing.T) {
	const n = 1_000_000
	lost, _ := lossRate(RandomLoss(0.08, 0.10), n, 1)
	if r := float64(lost) / n; r < 0.03 || r > 0.04 {
		t.Errorf("loss 8%% 10%%: %.4f lost; want about 0.035, as netem's get_crandom gives", r)
	}
	if lost, _ := lossRate(RandomLoss(0.01, 0.25), n, 1); lost > n/100000 {
		t.Errorf("loss 1%% 25%%: %d of %d lost; want almost none (under 1 in 100,000), as netem's get_crandom gives", lost, n)
	}
}
