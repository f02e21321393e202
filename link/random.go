package link

import (
	"math"
	"math/rand/v2"
	"time"
)

// Every random decision of the link comes from one generator per
// direction, seeded from Config.Seed and the direction, and is drawn in
// netem's order (see impair.go). The same seed gives the same decisions
// on every run, whatever the scheduling.

// newRand returns the generator of direction dir.
func newRand(seed uint64, dir Dir) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x6e6574656d<<8|uint64(dir)))
}

// scaled is a probability on netem's scale: 0 is never, MaxUint32 always
// (tc's set_percent: rint(p × UINT32_MAX)).
func scaled(p float64) uint32 {
	return uint32(math.Round(p * math.MaxUint32))
}

// crandom is netem's correlated uniform generator (get_crandom): each
// value is the weighted mean of a fresh one and the previous, with weight
// rho on the previous. rho 0 gives plain uniform values.
type crandom struct {
	rho  uint32
	last uint32
}

// newCrandom starts a correlated generator with correlation corr (0..1);
// its first "previous" value is drawn from r, as netem draws it at setup.
func newCrandom(corr float64, r *rand.Rand) crandom {
	return crandom{rho: scaled(corr), last: r.Uint32()}
}

// next returns the next value, on [0, MaxUint32].
func (c *crandom) next(r *rand.Rand) uint32 {
	v := r.Uint32()
	if c.rho == 0 {
		return v
	}
	rho := uint64(c.rho) + 1
	c.last = uint32((uint64(v)*((1<<32)-rho) + uint64(c.last)*rho) >> 32)
	return c.last
}

// newNoiseRand returns direction dir's generator for Config.Noise: one
// of its own, so that the impairments' draws are the same with or
// without noise.
func newNoiseRand(seed uint64, dir Dir) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x646974686572^uint64(dir)))
}

// hashSeed is the perturbation of direction dir's fq_codel flow hash
// (fqcodel.go): drawn from a generator of its own, so that the
// impairments' draws are the same with or without fq_codel.
func hashSeed(seed uint64, dir Dir) uint32 {
	return rand.New(rand.NewPCG(seed, 0x66715f636f64656c^uint64(dir))).Uint32()
}

// Draw is one packet's wait, from r.
func (n Noise) Draw(r *rand.Rand) time.Duration {
	if n.Spread <= 0 {
		return n.Base
	}
	return n.Base + time.Duration(min(r.ExpFloat64()*float64(n.Spread), float64(MaxJitter)))
}
