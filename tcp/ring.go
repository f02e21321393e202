package tcp

import (
	"sync"

	"gvisor.dev/gvisor/pkg/buffer"
)

// ringChunk is the size of the chunks a byte ring is made of.
const ringChunk = 16 << 10

// chunkSpareBytes bounds the chunks kept for reuse, for the whole
// process: what rings give back beyond it is left to the garbage
// collector.
const chunkSpareBytes = 8 << 20

// chunkSpares are the chunks rings gave back, for any ring of any
// connection of any protocol to take: a chunk holds no state of a run,
// only bytes that the ring taking it overwrites before it reads them.
var chunkSpares struct {
	mu   sync.Mutex // a leaf
	free []*[ringChunk]byte
}

func takeChunk() *[ringChunk]byte {
	chunkSpares.mu.Lock()
	defer chunkSpares.mu.Unlock()
	if n := len(chunkSpares.free); n > 0 {
		c := chunkSpares.free[n-1]
		chunkSpares.free[n-1] = nil
		chunkSpares.free = chunkSpares.free[:n-1]
		return c
	}
	return new([ringChunk]byte)
}

func giveChunk(c *[ringChunk]byte) {
	chunkSpares.mu.Lock()
	defer chunkSpares.mu.Unlock()
	if (len(chunkSpares.free)+1)*ringChunk <= chunkSpareBytes {
		chunkSpares.free = append(chunkSpares.free, c)
	}
}

// A ring is a queue of bytes addressed by position, 0 being the first
// byte it holds (the sender's una, the receiver's copied), held in
// chunks of ringChunk bytes: it grows by taking chunks and shrinks by
// giving back those its front has left, so it never copies what it holds
// and never holds a chunk beyond its reserved end. A ring that holds no
// chunk keeps at most a list of four chunk pointers.
//
// Invariants: off < ringChunk while chunks are held, 0 when none is;
// positions [0, len(c)*ringChunk-off) are writable.
type ring struct {
	c   []*[ringChunk]byte
	off int // position 0's offset in c[0]
}

// ringListKept is the capacity of a chunk list an empty ring keeps.
const ringListKept = 4

// held reports whether the ring holds any chunk.
func (r *ring) held() bool { return len(r.c) > 0 }

// reserve makes positions [0, n) writable.
func (r *ring) reserve(n int) {
	if r.c == nil {
		r.c = make([]*[ringChunk]byte, 0, ringListKept)
	}
	for len(r.c)*ringChunk-r.off < n {
		r.c = append(r.c, takeChunk())
	}
}

// span is the run of bytes from position at to the end of its chunk, at
// most n long. The positions must be reserved.
func (r *ring) span(at, n int) []byte {
	p := r.off + at
	i := p % ringChunk
	return r.c[p/ringChunk][i:min(ringChunk, i+n)]
}

// copyIn writes b at position at, which must be reserved with all of b.
func (r *ring) copyIn(at int, b []byte) {
	for len(b) > 0 {
		k := copy(r.span(at, len(b)), b)
		b, at = b[k:], at+k
	}
}

// copyOut fills b from position at.
func (r *ring) copyOut(b []byte, at int) {
	for len(b) > 0 {
		k := copy(b, r.span(at, len(b)))
		b, at = b[k:], at+k
	}
}

// drop forgets positions [0, n): position n becomes 0, and the chunks
// the front has left go back to the spares. A ring that holds nothing
// has nothing to forget.
func (r *ring) drop(n int) {
	if len(r.c) == 0 {
		return
	}
	r.off += n
	k := min(r.off/ringChunk, len(r.c))
	if k == 0 {
		return
	}
	for _, c := range r.c[:k] {
		giveChunk(c)
	}
	m := copy(r.c, r.c[k:])
	clear(r.c[m:])
	r.c = r.c[:m]
	r.off -= k * ringChunk
	if m == 0 {
		r.free()
	}
}

// A payload is n bytes of a ring from position off: a segment's data,
// copied out only where the segment is built.
type payload struct {
	r   *ring
	off int
	n   int
}

// copyTo fills b, len(b) == p.n, with the payload.
func (p payload) copyTo(b []byte) {
	if p.n > 0 {
		p.r.copyOut(b[:p.n], p.off)
	}
}

// buffer is the payload copied into a buffer of its own.
func (p payload) buffer() buffer.Buffer {
	if p.n == 0 {
		return buffer.Buffer{}
	}
	v := buffer.NewViewSize(p.n)
	p.copyTo(v.AsSlice())
	return buffer.MakeWithView(v)
}

// free gives every chunk back: the ring holds nothing.
func (r *ring) free() {
	for _, c := range r.c {
		giveChunk(c)
	}
	clear(r.c)
	r.c, r.off = r.c[:0], 0
	if cap(r.c) > ringListKept {
		r.c = nil
	}
}
