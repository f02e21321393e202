package pcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// The pcapng blocks, options and values NgWriter writes (the pcapng
// specification, draft-ietf-opsawg-pcapng).
const (
	blockSection   = 0x0A0D0D0A
	blockInterface = 0x00000001
	blockPacket    = 0x00000006 // Enhanced Packet Block

	byteOrderMagic = 0x1A2B3C4D
	linkTypeRaw    = 101 // LINKTYPE_RAW: the packet begins with its IP header

	optEnd         = 0
	optComment     = 1
	optSHBUserAppl = 4
	optIfName      = 2
	optIfDesc      = 3
	optIfTSResol   = 9
	optEPBFlags    = 2

	tsResolNanos = 9 // if_tsresol: 10^-9 s
)

// Direction is a packet's direction as the interface saw it: the two
// lowest bits of a pcapng packet's flags (epb_flags), which Wireshark
// shows as frame.packet_flags_direction.
type Direction uint8

// Directions.
const (
	DirUnknown  Direction = 0 // not said: no flags are written
	DirInbound  Direction = 1 // the interface received it
	DirOutbound Direction = 2 // the interface sent it
)

// Record is one packet of a pcapng capture.
type Record struct {
	Interface int       // as Interface returned it
	Time      time.Time // written in nanoseconds since the Unix epoch
	Packet    []byte    // a raw IPv4 packet; at most SnapLen bytes are kept
	Dir       Direction // DirUnknown writes no epb_flags
	Comment   string    // "" writes none; Wireshark shows it as frame.comment
}

// NgWriter writes a pcapng file of raw IPv4 packets (link type RAW) with
// nanosecond timestamps: one section, an interface per capture point, and
// each packet with its direction and a comment where it has them. The
// file holds nothing of the machine that wrote it, so equal records give
// byte-identical files. It is safe for concurrent use.
type NgWriter struct {
	mu     sync.Mutex
	w      io.Writer
	buf    []byte
	ifaces int
	err    error
	n      int
}

// NewNgWriter writes the section header, naming app as the application
// that wrote the file, and returns a writer with no interface yet.
func NewNgWriter(w io.Writer, app string) (*NgWriter, error) {
	p := &NgWriter{w: w}
	b := p.start(blockSection)
	b = binary.LittleEndian.AppendUint32(b, byteOrderMagic)
	b = binary.LittleEndian.AppendUint16(b, 1) // version 1.0
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint64(b, ^uint64(0)) // section length not given
	if app != "" {
		b = appendOption(b, optSHBUserAppl, []byte(app))
	}
	if err := p.flush(b, app != ""); err != nil {
		return nil, fmt.Errorf("pcap: write header: %w", err)
	}
	return p, nil
}

// Interface adds a capture point named name (Wireshark's
// frame.interface_name), described by desc, and returns its number for
// Record.Interface. Interfaces are numbered from 0 in the order added.
// After a write error it returns -1.
func (p *NgWriter) Interface(name, desc string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return -1
	}
	b := p.start(blockInterface)
	b = binary.LittleEndian.AppendUint16(b, linkTypeRaw)
	b = binary.LittleEndian.AppendUint16(b, 0) // reserved
	b = binary.LittleEndian.AppendUint32(b, SnapLen)
	if name != "" {
		b = appendOption(b, optIfName, []byte(name))
	}
	if desc != "" {
		b = appendOption(b, optIfDesc, []byte(desc))
	}
	b = appendOption(b, optIfTSResol, []byte{tsResolNanos})
	if p.err = p.flush(b, true); p.err != nil {
		return -1
	}
	p.ifaces++
	return p.ifaces - 1
}

// Write records r. The first write error is kept and returned by Err;
// later records are not written. A record of an interface not added is
// an error.
func (p *NgWriter) Write(r Record) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return
	}
	if r.Interface < 0 || r.Interface >= p.ifaces {
		p.err = fmt.Errorf("no interface %d (%d added)", r.Interface, p.ifaces)
		return
	}
	n := min(len(r.Packet), SnapLen)
	ts := uint64(r.Time.UnixNano())
	b := p.start(blockPacket)
	b = binary.LittleEndian.AppendUint32(b, uint32(r.Interface))
	b = binary.LittleEndian.AppendUint32(b, uint32(ts>>32))
	b = binary.LittleEndian.AppendUint32(b, uint32(ts))
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Packet)))
	b = appendPadded(b, r.Packet[:n])
	if r.Comment != "" {
		b = appendOption(b, optComment, []byte(r.Comment))
	}
	if r.Dir != DirUnknown {
		b = appendOption(b, optEPBFlags, binary.LittleEndian.AppendUint32(nil, uint32(r.Dir)))
	}
	if p.err = p.flush(b, r.Comment != "" || r.Dir != DirUnknown); p.err == nil {
		p.n++
	}
}

// Count is the number of packets written.
func (p *NgWriter) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Err returns the first write error.
func (p *NgWriter) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return fmt.Errorf("pcap: write: %w", p.err)
	}
	return nil
}

// start begins a block of type typ in p's buffer: its type and a length
// that flush fills in.
func (p *NgWriter) start(typ uint32) []byte {
	b := binary.LittleEndian.AppendUint32(p.buf[:0], typ)
	return binary.LittleEndian.AppendUint32(b, 0)
}

// flush ends the block b began by start (its body a whole number of
// 32-bit words): the end of its options if it has some, its length at
// both ends; and writes it.
func (p *NgWriter) flush(b []byte, options bool) error {
	if options {
		b = binary.LittleEndian.AppendUint32(b, optEnd)
	}
	total := uint32(len(b) + 4)
	binary.LittleEndian.PutUint32(b[4:8], total)
	b = binary.LittleEndian.AppendUint32(b, total)
	p.buf = b
	_, err := p.w.Write(b)
	return err
}

// appendOption appends an option of code with value v, padded to 32 bits;
// a value is at most 65535 bytes, and is cut there.
func appendOption(b []byte, code uint16, v []byte) []byte {
	v = v[:min(len(v), 0xffff)]
	b = binary.LittleEndian.AppendUint16(b, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(v)))
	return appendPadded(b, v)
}

// appendPadded appends v and zeros up to a multiple of 4 bytes.
func appendPadded(b, v []byte) []byte {
	b = append(b, v...)
	return append(b, make([]byte, padded(len(v))-len(v))...)
}

// padded is n rounded up to a multiple of 4.
func padded(n int) int { return (n + 3) &^ 3 }

// NgInterface is a capture interface of a pcapng file.
type NgInterface struct {
	Name, Description string
}

// ReadNg reads a pcapng file as NgWriter writes it (one little-endian
// section of raw IP interfaces with nanosecond timestamps): its
// interfaces and its packets, with their direction and comment. Blocks of
// other types are skipped.
func ReadNg(r io.Reader) ([]NgInterface, []Record, error) {
	file, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	var ifaces []NgInterface
	var recs []Record
	for off := 0; off < len(file); {
		typ, body, opts, err := ngBlockAt(file, off)
		if err != nil {
			return nil, nil, fmt.Errorf("pcap: block at byte %d: %w", off, err)
		}
		at := off
		off += len(body) + len(opts) + 12
		switch typ {
		case blockInterface:
			ifaces = append(ifaces, NgInterface{Name: string(option(opts, optIfName)), Description: string(option(opts, optIfDesc))})
		case blockPacket:
			rec, err := ngRecord(body, opts, len(ifaces))
			if err != nil {
				return nil, nil, fmt.Errorf("pcap: block at byte %d: %w", at, err)
			}
			recs = append(recs, rec)
		}
	}
	return ifaces, recs, nil
}

// ngBlockAt splits the block at file[off:] into its type, its fixed body
// (with a packet's data) and its options.
func ngBlockAt(file []byte, off int) (typ uint32, body, opts []byte, err error) {
	b := file[off:]
	if len(b) < 12 {
		return 0, nil, nil, errors.New("a short block")
	}
	typ, n := binary.LittleEndian.Uint32(b[0:4]), int(binary.LittleEndian.Uint32(b[4:8]))
	if typ == blockSection && binary.LittleEndian.Uint32(b[8:12]) != byteOrderMagic {
		return 0, nil, nil, errors.New("not a little-endian section")
	}
	if n < 12 || n%4 != 0 || n > len(b) || binary.LittleEndian.Uint32(b[n-4:n]) != uint32(n) {
		return 0, nil, nil, fmt.Errorf("a bad length %d", n)
	}
	inner := b[8 : n-4]
	fixed := len(inner)
	switch typ {
	case blockSection:
		fixed = 16
	case blockInterface:
		fixed = 8
	case blockPacket:
		if len(inner) >= 20 {
			fixed = 20 + padded(int(binary.LittleEndian.Uint32(inner[12:16])))
		}
	}
	if fixed > len(inner) {
		return 0, nil, nil, errors.New("a short block")
	}
	return typ, inner[:fixed], inner[fixed:], nil
}

// ngRecord is the packet of an enhanced packet block's body and options,
// in a file of n interfaces.
func ngRecord(body, opts []byte, n int) (Record, error) {
	if len(body) < 20 {
		return Record{}, errors.New("a short packet block")
	}
	iface := int(binary.LittleEndian.Uint32(body[0:4]))
	if iface >= n {
		return Record{}, fmt.Errorf("a packet of interface %d, of %d", iface, n)
	}
	ts := uint64(binary.LittleEndian.Uint32(body[4:8]))<<32 | uint64(binary.LittleEndian.Uint32(body[8:12]))
	captured := int(binary.LittleEndian.Uint32(body[12:16]))
	rec := Record{Interface: iface, Time: time.Unix(0, int64(ts)).UTC(), Packet: body[20 : 20+captured], Comment: string(option(opts, optComment))}
	if f := option(opts, optEPBFlags); len(f) == 4 {
		rec.Dir = Direction(binary.LittleEndian.Uint32(f) & 3)
	}
	return rec, nil
}

// option is the value of the first option of code in opts; nil if none.
func option(opts []byte, code uint16) []byte {
	for len(opts) >= 4 {
		c, l := binary.LittleEndian.Uint16(opts[0:2]), int(binary.LittleEndian.Uint16(opts[2:4]))
		if c == optEnd || 4+l > len(opts) {
			return nil
		}
		if c == code {
			return opts[4 : 4+l]
		}
		opts = opts[min(4+padded(l), len(opts)):]
	}
	return nil
}
