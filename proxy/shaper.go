package proxy

import "io"

// Direction is one direction of a connection through the proxy.
type Direction int

const (
	// Up runs from the client to the upstream.
	Up Direction = iota
	// Down runs from the upstream back to the client.
	Down
)

func (d Direction) String() string {
	if d == Up {
		return "up"
	}
	return "down"
}

// A Shaper acts on the bytes of one direction of one connection where
// the proxy writes them to the receiving program's socket, past the link:
// the client's for Down, the upstream's for Up. It may pass each chunk
// on whole, in pieces, later, in part or not at all, and end the
// connection through its Stream. The link has carried the bytes already;
// a Shaper changes what the program sees of them, not the link's packets.
//
// A Shaper's methods are called on the direction's goroutine, one at a
// time; while one runs, the direction reads nothing more, so a Shaper
// that waits holds its sender back through the link, as a slow reader
// does. One that waits gives up when its Stream's Done is closed.
type Shaper interface {
	// Write passes p, just read from the link, on to w, the receiving
	// socket. An error from w is to be returned: it aborts the
	// connection, as a failed write does. p is the proxy's buffer, valid
	// until Write returns.
	Write(w io.Writer, p []byte) error

	// EndOfStream is called when the sender has ended its stream, before
	// the proxy passes the end on (as a half-close); it may wait first.
	EndOfStream()
}

// A Stream is one direction of one connection, as its Shaper sees it.
type Stream struct {
	s   *session
	dir Direction
}

// shaper is the Config.Shape's Shaper for direction dir; nil if none.
func (s *session) shaper(dir Direction) Shaper {
	if s.p.cfg.Shape == nil {
		return nil
	}
	return s.p.cfg.Shape(&Stream{s: s, dir: dir})
}

// Direction is the stream's direction.
func (st *Stream) Direction() Direction { return st.dir }

// ID is the connection's, as its Record names it.
func (st *Stream) ID() uint64 { return st.s.id }

// Done is closed when the connection stops: closed, aborted or ended.
func (st *Stream) Done() <-chan struct{} { return st.s.done }

// Close ends the connection normally: every socket of it is closed, so
// that both programs see an end of stream (or a reset, where a socket
// holds bytes its program has not read, as for any close).
func (st *Stream) Close() { st.s.close() }

// Reset aborts the connection: both programs see a reset. why is the
// Record's Err.
func (st *Stream) Reset(why string) { st.s.abort(why) }
