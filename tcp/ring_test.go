package tcp

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// A ring holds what a plain byte queue holds, through random writes at
// random positions, reads across chunk boundaries and drops of any
// length (to the end, to a chunk's edge, of nothing), and it holds no
// chunk once emptied.
func TestRingMatchesAByteQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var r ring
	var want []byte // what positions [0, len(want)) hold
	for step := range 20000 {
		switch rng.IntN(4) {
		case 0, 1: // write at the end, or over what is held
			at := len(want)
			if len(want) > 0 && rng.IntN(3) == 0 {
				at = rng.IntN(len(want))
			}
			b := make([]byte, rng.IntN(3*ringChunk))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			r.reserve(at + len(b))
			r.copyIn(at, b)
			if end := at + len(b); end > len(want) {
				want = append(want, make([]byte, end-len(want))...)
			}
			copy(want[at:], b)
		case 2: // read a stretch
			if len(want) == 0 {
				continue
			}
			at := rng.IntN(len(want))
			got := make([]byte, rng.IntN(len(want)-at)+1)
			r.copyOut(got, at)
			if !bytes.Equal(got, want[at:at+len(got)]) {
				t.Fatalf("step %d: %d bytes at %d differ from what was written", step, len(got), at)
			}
		case 3: // drop the front
			n := 0
			switch rng.IntN(3) {
			case 0:
				n = len(want)
			case 1:
				n = min(len(want), ringChunk-r.off)
			default:
				n = rng.IntN(len(want) + 1)
			}
			r.drop(n)
			want = want[n:]
			if len(want) == 0 {
				r.free()
			}
		}
		if len(want) == 0 && (r.held() || r.off != 0) {
			t.Fatalf("step %d: empty, the ring holds %d chunks at offset %d", step, len(r.c), r.off)
		}
	}
	r.free()
}
