package link

import (
	"fmt"
	"math/rand/v2"
)

// LossModel is one of netem's loss generators.
type LossModel uint8

// Loss models, as tc names them.
const (
	LossRandom LossModel = iota // loss random P [CORR]: independent (or correlated) drops
	LossState                   // loss state p13 [p31 [p32 [p23 [p14]]]]: the 4-state Markov model
	LossGE                      // loss gemodel p [r [1-h [1-k]]]: Gilbert-Elliott
)

// Loss drops packets the way netem's loss option does. The zero value
// loses nothing. Probabilities are fractions (0.01 is 1 %).
type Loss struct {
	Model LossModel

	// LossRandom: each packet is lost with probability P; Corr weighs the
	// previous random value into the next (netem's correlation).
	P, Corr float64

	// LossState: transition probabilities of the 4-state model: 1 = sent
	// in a gap, 2 = sent in a burst, 3 = lost in a burst, 4 = lost alone.
	// tc's defaults for missing values: P31 = 1 - P13, P32 = 0, P23 = 1,
	// P14 = 0 (StateLoss fills them).
	P13, P31, P32, P23, P14 float64

	// LossGE: Gilbert-Elliott. GoodToBad (p) and BadToGood (r) are the
	// transitions, BadLoss (1-h) and GoodLoss (1-k) the loss
	// probabilities in each state. tc's defaults: r = 1 - p, 1-h = 1,
	// 1-k = 0 (GELoss fills them).
	GoodToBad, BadToGood, BadLoss, GoodLoss float64
}

// RandomLoss is "loss random p [corr]".
func RandomLoss(p, corr float64) Loss { return Loss{Model: LossRandom, P: p, Corr: corr} }

// StateLoss is "loss state p13 [p31 [p32 [p23 [p14]]]]": give 1 to 5
// values; the missing ones take tc's defaults.
func StateLoss(p ...float64) Loss {
	l := Loss{Model: LossState}
	if len(p) > 0 {
		l.P13, l.P31, l.P23 = p[0], 1-p[0], 1
	}
	for i, f := range []*float64{&l.P31, &l.P32, &l.P23, &l.P14} {
		if i+1 < len(p) {
			*f = p[i+1]
		}
	}
	return l
}

// GELoss is "loss gemodel p [r [1-h [1-k]]]": give 1 to 4 values; the
// missing ones take tc's defaults.
func GELoss(p ...float64) Loss {
	l := Loss{Model: LossGE}
	if len(p) > 0 {
		l.GoodToBad, l.BadToGood, l.BadLoss = p[0], 1-p[0], 1
	}
	for i, f := range []*float64{&l.BadToGood, &l.BadLoss, &l.GoodLoss} {
		if i+1 < len(p) {
			*f = p[i+1]
		}
	}
	return l
}

// IsZero reports whether l loses nothing.
func (l Loss) IsZero() bool {
	switch l.Model {
	case LossRandom:
		return l.P == 0
	case LossState:
		return l.P13 == 0 && l.P14 == 0
	case LossGE:
		return l.GoodLoss == 0 && (l.GoodToBad == 0 || l.BadLoss == 0)
	}
	return true
}

func (l Loss) validate(where string) error {
	check := func(name string, v float64) error {
		if v < 0 || v > 1 || v != v {
			return fmt.Errorf("link: %sLoss.%s is %v; want a fraction from 0 to 1 (0.01 is 1%%)", where, name, v)
		}
		return nil
	}
	var fields map[string]float64
	switch l.Model {
	case LossRandom:
		fields = map[string]float64{"P": l.P, "Corr": l.Corr}
	case LossState:
		fields = map[string]float64{"P13": l.P13, "P31": l.P31, "P32": l.P32, "P23": l.P23, "P14": l.P14}
	case LossGE:
		fields = map[string]float64{"GoodToBad": l.GoodToBad, "BadToGood": l.BadToGood, "BadLoss": l.BadLoss, "GoodLoss": l.GoodLoss}
	default:
		return fmt.Errorf("link: %sLoss.Model is %d; want LossRandom, LossState or LossGE", where, l.Model)
	}
	for _, name := range []string{"P", "Corr", "P13", "P31", "P32", "P23", "P14", "GoodToBad", "BadToGood", "BadLoss", "GoodLoss"} {
		if v, ok := fields[name]; ok {
			if err := check(name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// loss is the running state of a Loss: netem's loss_event with its
// random, 4-state and Gilbert-Elliott generators (sch_netem.c).
type loss struct {
	model LossModel
	p     uint32 // random
	cor   crandom
	// a1..a5 are netem's clg fields: p13, p31, p32, p14, p23 for the
	// 4-state model; p, r, h, 1-k for Gilbert-Elliott.
	a1, a2, a3, a4, a5 uint32
	state              uint8
}

func newLoss(l Loss, r *rand.Rand) loss {
	s := loss{model: l.Model, state: 1}
	switch l.Model {
	case LossRandom:
		s.p = scaled(l.P)
		s.cor = newCrandom(l.Corr, r)
	case LossState:
		s.a1, s.a2, s.a3, s.a4, s.a5 = scaled(l.P13), scaled(l.P31), scaled(l.P32), scaled(l.P14), scaled(l.P23)
	case LossGE:
		// tc passes h, the complement of the 1-h it reads.
		s.a1, s.a2, s.a3, s.a4 = scaled(l.GoodToBad), scaled(l.BadToGood), ^scaled(l.BadLoss), scaled(l.GoodLoss)
	}
	return s
}

// lost decides whether the next packet is lost. Its arithmetic is netem's,
// uint32 overflow and exact-boundary cases included, so that a sequence of
// random values gives the same decisions.
func (s *loss) lost(r *rand.Rand) bool {
	switch s.model {
	case LossRandom:
		return s.p != 0 && s.p >= s.cor.next(r)
	case LossState:
		rnd := r.Uint32()
		switch s.state {
		case 1: // sent in a gap
			if rnd < s.a4 {
				s.state = 4
				return true
			} else if s.a4 < rnd && rnd < s.a1+s.a4 {
				s.state = 3
				return true
			} else if s.a1+s.a4 < rnd {
				s.state = 1
			}
		case 2: // sent in a burst
			if rnd < s.a5 {
				s.state = 3
				return true
			}
		case 3: // lost in a burst
			if rnd < s.a3 {
				s.state = 2
			} else if s.a3 < rnd && rnd < s.a2+s.a3 {
				s.state = 1
			} else if s.a2+s.a3 < rnd {
				return true
			}
		case 4: // lost alone
			s.state = 1
		}
	case LossGE:
		switch s.state {
		case 1: // good
			if r.Uint32() < s.a1 {
				s.state = 2
			}
			if r.Uint32() < s.a4 {
				return true
			}
		case 2: // bad
			if r.Uint32() < s.a2 {
				s.state = 1
			}
			if r.Uint32() > s.a3 {
				return true
			}
		}
	}
	return false
}
