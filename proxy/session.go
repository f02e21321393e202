package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Record describes one connection through the proxy.
type Record struct {
	ID       uint64    // in the order of acceptance, from 1
	Via      string    // the listener: "forward 127.0.0.1:8080" or "socks5 127.0.0.1:1080"
	Client   string    // the client's address
	Upstream string    // host:port, as the forward or the SOCKS5 request named it
	Start    time.Time // when the proxy accepted it
	Duration time.Duration
	// BytesUp went from the client to the upstream, BytesDown back: what
	// was written to the upstream's and the client's sockets.
	BytesUp, BytesDown int64
	// Retransmits counts the connection's segments that the link carried
	// again, both ways, from its first SYN until this record: a data
	// segment or a SYN that ends at or before the highest sequence number
	// its sender had sent, as netemu run counts them (a FIN alone sent
	// again is not counted). Totals.LinkRetransmits is the same count
	// over the whole link.
	Retransmits uint64
	// Err says why the connection ended abnormally (an upstream that
	// refused, a reset); "" for a normal close.
	Err string
}

// MarshalJSON writes the record with durations in milliseconds.
func (r Record) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ID          uint64  `json:"id"`
		Via         string  `json:"via"`
		Client      string  `json:"client"`
		Upstream    string  `json:"upstream"`
		Start       string  `json:"start"`
		DurationMs  float64 `json:"duration_ms"`
		BytesUp     int64   `json:"bytes_up"`
		BytesDown   int64   `json:"bytes_down"`
		Retransmits uint64  `json:"retransmits"`
		Err         string  `json:"error,omitempty"`
	}{r.ID, r.Via, r.Client, r.Upstream, r.Start.UTC().Format(time.RFC3339Nano),
		float64(r.Duration) / float64(time.Millisecond), r.BytesUp, r.BytesDown, r.Retransmits, r.Err})
}

// session is one connection through the proxy: the client's socket, the
// two emulated ends, the upstream's socket.
type session struct {
	p      *Proxy
	id     uint64
	via    string
	client net.Conn
	target string
	start  time.Time

	up, down    atomic.Int64
	retransmits atomic.Uint64 // counted by Proxy.count while it owns flow
	flow        flowKey       // the emulated connection's ports, once dialed; guarded by Proxy.count.mu
	sides       atomic.Int32  // sides still running: the client host's, and the server host's once registered
	// upstream, for a SOCKS5 or CONNECT session, is the upstream's
	// socket, dialed by the client host's side before its reply; set
	// before the session is registered for the server host's side.
	upstream net.Conn

	done     chan struct{} // closed once the session stops: aborted, closed or ended
	stopOnce sync.Once

	mu      sync.Mutex
	conns   []net.Conn // every socket of the session, to abort
	aborted bool       // no socket may join: the session is aborted or closed
	closed  bool       // closed normally, by a Shaper (Stream.Close)
	err     string     // the first failure
}

// add adds c to the session's sockets; false, with c aborted, if the
// session is aborted already.
func (s *session) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		abort(c)
		return false
	}
	s.conns = append(s.conns, c)
	return true
}

// fail records why the session ended, if nothing did before.
func (s *session) fail(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == "" {
		s.err = why
	}
}

// abort resets every socket of the session, now and later; why, if not
// empty, is recorded as fail does. A session closed already stays
// closed: its sockets are gone, and the errors that follow are the
// close's.
func (s *session) abort(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if why != "" && s.err == "" {
		s.err = why
	}
	s.aborted = true
	s.stop()
	for _, c := range s.conns {
		abort(c)
	}
}

// close closes every socket of the session normally (a FIN where the
// socket holds no unread bytes), and aborts those that join later.
func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		return
	}
	s.aborted, s.closed = true, true
	s.stop()
	for _, c := range s.conns {
		c.Close()
	}
}

// stop closes done, once (a session made without one has none).
func (s *session) stop() {
	s.stopOnce.Do(func() {
		if s.done != nil {
			close(s.done)
		}
	})
}

// ended reports whether the session has stopped: aborted, closed or
// ended. It takes no lock.
func (s *session) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// end ends one side's share; the last one files the record.
func (s *session) end() {
	if s.sides.Add(-1) == 0 {
		s.p.finish(s)
	}
}

func (s *session) record() Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Record{ID: s.id, Via: s.via, Client: s.client.RemoteAddr().String(), Upstream: s.target,
		Start: s.start, Duration: time.Since(s.start), BytesUp: s.up.Load(), BytesDown: s.down.Load(),
		Retransmits: s.retransmits.Load(), Err: s.err}
}

// join copies a to b and b to a until both directions end. An end of
// stream is passed on as a half-close; a read or write that fails (a
// reset) aborts the whole session, so that the reset reaches the far
// end. Otherwise both sockets are closed once both directions are done.
// toB and toA, if not nil, count the bytes written; shB and shA, if not
// nil, write them.
func (s *session) join(a, b net.Conn, aName, bName string, toB, toA *atomic.Int64, shB, shA Shaper) {
	errc := make(chan error, 1)
	go func() { errc <- s.pipe(b, a, bName, aName, toB, shB) }()
	err := s.pipe(a, b, aName, bName, toA, shA)
	if err2 := <-errc; err == nil {
		err = err2
	}
	if err == nil {
		a.Close()
		b.Close()
	}
}

// pipe copies src to dst until src's end of stream, which it passes on
// with CloseWrite. A failed read or write is returned, naming its socket;
// so is a read that fails because the session was aborted. A Shaper, if
// not nil, writes in pipe's place and is told of the end of stream first.
//
// The buffer is taken from the pool only once src has something to read
// (waitRead) and given back after each write, so an idle connection holds
// no buffer, and a busy one at most one per direction and side.
func (s *session) pipe(dst, src net.Conn, dstName, srcName string, count *atomic.Int64, sh Shaper) error {
	w := &countingWriter{w: dst, n: count}
	for {
		if err := waitRead(src); err != nil && !errors.Is(err, io.EOF) {
			return s.sideErr(srcName, err)
		}
		bp := s.p.buffer()
		n, err := src.Read(*bp)
		var werr error
		if n > 0 {
			if sh != nil {
				werr = sh.Write(w, (*bp)[:n])
			} else {
				_, werr = w.Write((*bp)[:n])
			}
		}
		s.p.buffers.Put(bp)
		if werr != nil {
			return s.sideErr(dstName, werr)
		}
		if errors.Is(err, io.EOF) {
			if sh != nil {
				sh.EndOfStream()
			}
			if cerr := dst.(interface{ CloseWrite() error }).CloseWrite(); cerr != nil {
				return s.sideErr(dstName, cerr)
			}
			return nil
		}
		if err != nil {
			return s.sideErr(srcName, err)
		}
	}
}

// sideErr names the socket an error came from, and aborts the session:
// the other direction's blocked read returns, and the reset reaches both
// ends.
func (s *session) sideErr(name string, err error) error {
	err = fmt.Errorf("%s: %w", name, err)
	s.abort(err.Error())
	return err
}

// countingWriter writes to w and adds what it wrote to n, if not nil.
type countingWriter struct {
	w net.Conn
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	m, err := c.w.Write(p)
	if c.n != nil {
		c.n.Add(int64(m))
	}
	return m, err
}

// buffer returns a copy buffer of Config.BufferSize bytes.
func (p *Proxy) buffer() *[]byte {
	if bp, ok := p.buffers.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, p.cfg.BufferSize)
	return &b
}

// abort resets c: SO_LINGER 0, then Close, on a kernel socket and on an
// emulated one alike.
func abort(c net.Conn) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		l.SetLinger(0)
	}
	c.Close()
}
