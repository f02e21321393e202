package proxy

import (
	"bytes"
	"net"
	"runtime"
	"strings"
	"testing"
)

// readConn is a net.Conn that reads from r and discards writes.
type readConn struct {
	net.Conn
	r *bytes.Reader
}

func (c readConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c readConn) Write(b []byte) (int, error) { return len(b), nil }

// The CONNECT head is read in linear time: parsing a head just under
// the bound allocates a small multiple of its size, where a search of
// the whole head at every byte allocates (or scans) its square.
func TestConnectHeadLinear(t *testing.T) {
	head := "CONNECT 127.0.0.1:80 HTTP/1.1\r\nX-Pad: " + strings.Repeat("a", maxHTTPHead-64) + "\r\n\r\n"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	target, _, err := handshake(readConn{r: bytes.NewReader([]byte(head))})
	runtime.ReadMemStats(&after)
	if err != nil || target != "127.0.0.1:80" {
		t.Fatalf("handshake: %q, %v", target, err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte head: %d bytes allocated", len(head), alloc)
	if alloc > 16*maxHTTPHead {
		t.Errorf("a %d-byte head cost %d bytes of allocation; want under %d (linear)", len(head), alloc, 16*maxHTTPHead)
	}
	// One byte over the bound is refused without reading on.
	long := "CONNECT 127.0.0.1:80 HTTP/1.1\r\nX-Pad: " + strings.Repeat("a", 2*maxHTTPHead)
	r := bytes.NewReader([]byte(long))
	if _, _, err := handshake(readConn{r: r}); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("an unending head: %v; want it refused", err)
	}
	if read := len(long) - r.Len(); read > maxHTTPHead {
		t.Errorf("read %d bytes of an unending head; want at most %d", read, maxHTTPHead)
	}
}

// The proxy keeps the totals of every connection served, but records of
// the last KeptRecords only: its memory does not grow with connections
// served.
func TestRecordsBounded(t *testing.T) {
	p := &Proxy{live: map[*session]struct{}{}}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	const served = 3 * KeptRecords
	for i := range served {
		s := &session{p: p, id: uint64(i + 1), client: a}
		s.up.Store(2)
		s.retransmits.Store(1)
		p.live[s] = struct{}{}
		p.sessions.Add(1)
		p.finish(s)
	}
	recs := p.Records()
	if len(recs) != KeptRecords || recs[0].ID != served-KeptRecords+1 || recs[len(recs)-1].ID != served {
		t.Fatalf("after %d connections, %d records kept, ids %d to %d; want the last %d", served, len(recs), recs[0].ID, recs[len(recs)-1].ID, KeptRecords)
	}
	if tot := p.Totals(); tot.Conns != served || tot.BytesUp != 2*served || tot.Retransmits != served {
		t.Errorf("totals %+v; want %d connections, %d bytes up, %d retransmits", tot, served, 2*served, served)
	}
}
