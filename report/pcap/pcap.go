// Package pcap writes what crosses a link: pcap files that Wireshark
// and tshark open, with the run's timestamps (on the virtual clock they
// count from clock.Epoch, so two runs give byte-identical files). Writer
// writes the classic format, one stream of packets; NgWriter writes
// pcapng, an interface per capture point and each packet with its
// direction and a comment, and ReadNg reads that back.
package pcap

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// SnapLen is the largest packet a capture keeps whole.
const SnapLen = 65535

// Writer writes raw IPv4 packets (link type RAW) with nanosecond
// timestamps. It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   *pcapgo.Writer
	err error
	n   int
}

// NewWriter writes the file header to w and returns a writer for packets.
func NewWriter(w io.Writer) (*Writer, error) {
	pw := pcapgo.NewWriterNanos(w)
	if err := pw.WriteFileHeader(SnapLen, layers.LinkTypeRaw); err != nil {
		return nil, fmt.Errorf("pcap: write header: %w", err)
	}
	return &Writer{w: pw}, nil
}

// Packet records pkt as seen at t. The first write error is kept and
// returned by Err; later packets are not written.
func (p *Writer) Packet(t time.Time, pkt []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return
	}
	n := min(len(pkt), SnapLen)
	p.err = p.w.WritePacket(gopacket.CaptureInfo{Timestamp: t, CaptureLength: n, Length: len(pkt)}, pkt[:n])
	if p.err == nil {
		p.n++
	}
}

// Count is the number of packets written.
func (p *Writer) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Err returns the first write error.
func (p *Writer) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return fmt.Errorf("pcap: write: %w", p.err)
	}
	return nil
}
