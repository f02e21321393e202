package link

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Distribution is the shape of netem's delay jitter. Netem reads its
// shapes from tables that iproute2 generates (netem/normal.c, pareto.c,
// paretonormal.c, from NIST Net); netemu builds the same tables the same
// way, so a seeded run draws the same delays as netem would from them.
type Distribution uint8

// Jitter distributions, as tc names them.
const (
	Uniform      Distribution = iota // netem's default: uniform on [delay-jitter, delay+jitter)
	Normal                           // normal.dist
	Pareto                           // pareto.dist
	ParetoNormal                     // paretonormal.dist: ¼ normal + ¾ pareto
)

// Distributions lists the distributions in tc's order, for messages.
var Distributions = []Distribution{Uniform, Normal, Pareto, ParetoNormal}

func (d Distribution) String() string {
	switch d {
	case Normal:
		return "normal"
	case Pareto:
		return "pareto"
	case ParetoNormal:
		return "paretonormal"
	}
	return "uniform"
}

// distScale is NETEM_DIST_SCALE: table entries are multiples of
// sigma/distScale.
const distScale = 8192

// distTableSize is the generators' TABLESIZE; the tables keep every
// fourth entry.
const distTableSize = 16384

var (
	tablesOnce sync.Once
	tables     [4][]int16
)

// table returns the distribution's table; nil for Uniform.
func (d Distribution) table() []int16 {
	tablesOnce.Do(func() {
		normal := normalInverse()
		tables[Normal] = make([]int16, 0, distTableSize/4)
		tables[Pareto] = make([]int16, 0, distTableSize/4)
		tables[ParetoNormal] = make([]int16, 0, distTableSize/4)
		for i := 0; i < distTableSize; i += 4 {
			n := int(math.RoundToEven(normal[i] * distScale))
			tables[Normal] = append(tables[Normal], clampShort(n))
			tables[ParetoNormal] = append(tables[ParetoNormal], clampShort((n+3*paretoValue(65536-4*i))/4))
		}
		for i := 65536; i > 0; i -= 16 {
			tables[Pareto] = append(tables[Pareto], int16(paretoValue(i)))
		}
	})
	return tables[d]
}

// normalInverse is normal.c's table: for each of distTableSize+1 steps of
// the normal CDF, the largest x (in steps of 0.00005 from -10) that rounds
// to it.
func normalInverse() []float64 {
	t := make([]float64, distTableSize+1)
	for x := -10.0; x < 10.05; x += .00005 {
		i := int(math.RoundToEven(distTableSize * (.5 + .5*math.Erf(x/math.Sqrt2))))
		t[i] = x
	}
	return t
}

// paretoValue is pareto.c's entry for i/65536 (shape a = 3).
func paretoValue(i int) int {
	v := 1.0 / math.Pow(float64(i)/65536, 1.0/3.0)
	v -= 1.5
	v *= (4.0 / 3.0) * distScale
	if v > 32767 {
		v = 32767
	}
	return int(math.RoundToEven(v))
}

func clampShort(v int) int16 {
	return int16(min(max(v, math.MinInt16), math.MaxInt16))
}

// tabledist is netem's tabledist: a delay with mean mu and spread sigma
// (nanoseconds) drawn from the distribution, with correlation c.
func tabledist(mu, sigma int64, c *crandom, r *rand.Rand, d Distribution) int64 {
	if sigma == 0 {
		return mu
	}
	rnd := c.next(r)
	t := d.table()
	if t == nil {
		return int64(rnd%(2*uint32(sigma))) + mu - sigma
	}
	v := int64(t[int(rnd)%len(t)])
	x := (sigma % distScale) * v
	if x >= 0 {
		x += distScale / 2
	} else {
		x -= distScale / 2
	}
	return x/distScale + (sigma/distScale)*v + mu
}

// Table returns the distribution's table as netem receives it
// (TCA_NETEM_DELAY_DIST): entries are multiples of jitter/8192; nil for
// Uniform, which netem computes without a table.
func (d Distribution) Table() []int16 {
	return slices.Clone(d.table())
}
