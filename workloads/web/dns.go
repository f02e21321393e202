package web

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/netemu/netemu/emu"
	"golang.org/x/net/dns/dnsmessage"
)

// DNS, as a browser meets it: before its first connection to a host
// name the client asks a DNS server for the name's address, over UDP, and
// keeps the answer for the host's later connections. The server runs on
// the server host and knows one name, serverName, at the server's
// address. Messages are built and parsed with x/net's dnsmessage (the
// parser the standard library's own resolver uses); query IDs come from
// a generator seeded by the run's seed, so virtual runs send the same
// bytes every time.

const dnsPort = 53

// LookupRoundTrips is the round trips DNS adds to a run with it on: one
// lookup of the one host name, which later connections find cached.
func LookupRoundTrips(on bool) float64 {
	if on {
		return 1
	}
	return 0
}

// DNS's timeouts, as glibc's resolver has them: 5 s per try, two tries.
const (
	dnsTimeout  = 5 * time.Second
	dnsAttempts = 2
)

// dnsServer answers A queries for serverName on the server's port 53.
type dnsServer struct {
	pc   net.PacketConn
	done chan struct{}
}

func startDNS(env emu.Env) (*dnsServer, error) {
	pc, err := env.ListenPacket(dnsPort)
	if err != nil {
		return nil, fmt.Errorf("DNS server: %w", err)
	}
	s := &dnsServer{pc: pc, done: make(chan struct{})}
	env.Go(func() {
		defer close(s.done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp, ok := answer(buf[:n]); ok {
				pc.WriteTo(resp, from)
			}
		}
	})
	return s, nil
}

func (s *dnsServer) stop() {
	s.pc.Close()
	<-s.done
}

// fqdn is serverName as DNS writes it.
var fqdn = dnsmessage.MustNewName(serverName + ".")

// answer is the response to query: serverName's address for an A query
// of it, no records for another type, NXDOMAIN for another name. ok is
// false for what is not a query.
func answer(query []byte) (resp []byte, ok bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	known := strings.EqualFold(q.Name.String(), fqdn.String())
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if known && q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		err := b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 300},
			dnsmessage.AResource{A: emu.ServerAddr.As4()})
		if err != nil {
			return nil, false
		}
	}
	resp, err = b.Finish()
	return resp, err == nil
}

// resolver looks host names up on the server host's DNS server, once
// each: later lookups of a name, and those made while its first is on
// the way, get the first's answer, as from a browser's host cache.
// cache and each lookup's fields are guarded by mu.
type resolver struct {
	env emu.Env

	mu    sync.Mutex
	ids   *rand.ChaCha8
	cache map[string]*lookup
}

// lookup is one name's lookup: once done, addr or err is set.
type lookup struct {
	done    bool
	addr    netip.Addr
	err     error
	waiting []chan struct{} // the callers waiting for it, in arrival order
}

func newResolver(env emu.Env) *resolver {
	return &resolver{env: env, ids: rand.NewChaCha8(derive(env.Seed(), "dns query ids")), cache: map[string]*lookup{}}
}

// cached reports whether name's address is known.
func (r *resolver) cached(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.cache[name]
	return ok && l.done && l.err == nil
}

// resolve returns name's address: the cached one, or the answer to a
// lookup, its own or the one under way. Callers waiting for a lookup
// resume one at a time in the order they came (env.Go), so that their
// connections open in the same order on every run.
func (r *resolver) resolve(ctx context.Context, name string) (netip.Addr, error) {
	r.mu.Lock()
	if l, ok := r.cache[name]; ok {
		if l.done {
			r.mu.Unlock()
			return l.addr, l.err
		}
		ch := make(chan struct{})
		l.waiting = append(l.waiting, ch)
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return netip.Addr{}, ctx.Err()
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return l.addr, l.err
	}
	l := &lookup{}
	r.cache[name] = l
	var id [2]byte
	r.ids.Read(id[:])
	r.mu.Unlock()
	addr, err := r.query(ctx, name, binary.BigEndian.Uint16(id[:]))
	if err != nil {
		err = fmt.Errorf("DNS lookup of %s: %w", name, err)
	}
	r.mu.Lock()
	l.addr, l.err, l.done = addr, err, true
	if err != nil {
		delete(r.cache, name) // the next connection tries again
	}
	for _, ch := range l.waiting {
		r.env.Go(func() { close(ch) })
	}
	r.mu.Unlock()
	return addr, err
}

// query asks the DNS server for name's A record, with query ID id.
func (r *resolver) query(ctx context.Context, name string, id uint16) (netip.Addr, error) {
	n, err := dnsmessage.NewName(name + ".")
	if err != nil {
		return netip.Addr{}, err
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return netip.Addr{}, err
	}
	if err := b.Question(dnsmessage.Question{Name: n, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}); err != nil {
		return netip.Addr{}, err
	}
	msg, err := b.Finish()
	if err != nil {
		return netip.Addr{}, err
	}
	pc, to, err := r.env.DialPacket(ctx, dnsPort)
	if err != nil {
		return netip.Addr{}, err
	}
	defer pc.Close()
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	buf := make([]byte, 1500)
	for range dnsAttempts {
		if _, err := pc.WriteTo(msg, to); err != nil {
			return netip.Addr{}, orCtx(ctx, err)
		}
		pc.SetReadDeadline(r.env.Now().Add(dnsTimeout))
		for {
			m, _, err := pc.ReadFrom(buf)
			if isTimeout(err) && ctx.Err() == nil {
				break // send again
			}
			if err != nil {
				return netip.Addr{}, orCtx(ctx, err)
			}
			addr, ok, err := parseAnswer(buf[:m], id)
			if !ok {
				continue // not the answer to this query
			}
			return addr, err
		}
	}
	return netip.Addr{}, fmt.Errorf("no answer in %d tries of %v", dnsAttempts, dnsTimeout)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// orCtx is ctx's error if ctx is done, err otherwise.
func orCtx(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// parseAnswer reads a response to query id: the first A record's
// address. ok is false for a message that is not that response.
func parseAnswer(msg []byte, id uint16) (addr netip.Addr, ok bool, err error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil || !h.Response || h.ID != id {
		return netip.Addr{}, false, nil
	}
	if h.RCode != dnsmessage.RCodeSuccess {
		return netip.Addr{}, true, fmt.Errorf("the server answered %v", h.RCode)
	}
	if err := p.SkipAllQuestions(); err != nil {
		return netip.Addr{}, true, err
	}
	for {
		rh, err := p.AnswerHeader()
		if err == dnsmessage.ErrSectionDone {
			return netip.Addr{}, true, errors.New("the answer has no address")
		}
		if err != nil {
			return netip.Addr{}, true, err
		}
		if rh.Type != dnsmessage.TypeA {
			if err := p.SkipAnswer(); err != nil {
				return netip.Addr{}, true, err
			}
			continue
		}
		a, err := p.AResource()
		if err != nil {
			return netip.Addr{}, true, err
		}
		return netip.AddrFrom4(a.A), true, nil
	}
}
