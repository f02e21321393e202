package link

import (
	"math"
	"strings"
)

func nan() float64                { return math.NaN() }
func contains(s, sub string) bool { return strings.Contains(s, sub) }
