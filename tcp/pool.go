package tcp

import (
	"math/bits"
	"sync"
	"unsafe"
)

// A connection holds its queue of sent segments (sender.q), as its byte
// rings (ring.go), only while it holds something: it takes the queue when
// it sends and gives it back as soon as it empties, so an idle connection
// holds no buffer, as a Linux socket whose queues are empty holds no skb.
// What the connections of a protocol give back waits in its spares for
// the next one to take, so that emptying and filling again allocates
// nothing.
//
// Invariants that keep runs independent of what the spares hold:
//   - a queue's length is a power of two that depends only on the
//     segments it must hold (the growth rule in sender.appendSeg), never
//     on the queue that was spare;
//   - nothing reads a slot of a queue that was not written since the
//     queue was taken: a queue comes back as its last user left it.

// spareBytes bounds the spares of each length: as many queues of one
// length as fit in it are kept, none longer than it; the rest are left to
// the garbage collector. A protocol's spares thus hold at most 2 MiB.
const spareBytes = 256 << 10

// ringClasses is the number of lengths the spares sort rings by: 1 to
// 1<<31 elements.
const ringClasses = 32

// spares are the segment queues a protocol's connections gave back, by
// length.
type spares struct {
	mu   sync.Mutex             // a leaf: taken under an endpoint's lock, nothing taken under it
	segs [ringClasses][][]txSeg // segs[k]: queues of 1<<k segments
}

func (sp *spares) takeSegs(n int) []txSeg {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return takeRing(&sp.segs, n)
}

func (sp *spares) giveSegs(q []txSeg) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	giveRing(&sp.segs, q)
}

// takeRing returns a ring of n elements, a spare one if there is one.
func takeRing[T any](lists *[ringClasses][][]T, n int) []T {
	if k, ok := ringClass(n); ok {
		if l := lists[k]; len(l) > 0 {
			r := l[len(l)-1]
			l[len(l)-1] = nil
			lists[k] = l[:len(l)-1]
			return r
		}
	}
	return make([]T, n)
}

// giveRing keeps r if its length has room among the spares.
func giveRing[T any](lists *[ringClasses][][]T, r []T) {
	k, ok := ringClass(len(r))
	if !ok {
		return
	}
	size := len(r) * int(unsafe.Sizeof(r[0]))
	if (len(lists[k])+1)*size <= spareBytes {
		lists[k] = append(lists[k], r)
	}
}

// ringClass is the list a ring of n elements goes to, if any: n must be
// a power of two below 1<<ringClasses.
func ringClass(n int) (int, bool) {
	k := bits.TrailingZeros(uint(n))
	if n <= 0 || n&(n-1) != 0 || k >= ringClasses {
		return 0, false
	}
	return k, true
}
