package web

import (
	"strings"
	"testing"
)

// quic-go's window: 32 packets of some 1250 bytes in the first round,
// doubling after; TCP's: 10 segments of 1448 bytes.
func TestRounds(t *testing.T) {
	for _, c := range []struct {
		p         Proto
		n, rounds int
	}{
		{H3, 1, 1}, {H3, 32 * 1250, 1}, {H3, 32*1250 + 1, 2}, {H3, 120_000, 2}, {H3, 96 * 1250, 2}, {H3, 96*1250 + 1, 3},
		{H2, 1, 1}, {H2, 10 * 1448, 1}, {H2, 10*1448 + 1, 2}, {H2, 120_000, 4}, {H2C, 120_000, 4},
	} {
		if got := c.p.Protocol().Rounds(40, c.n, 6); got != c.rounds {
			t.Errorf("%s: %d bytes take %d rounds; want %d", c.p, c.n, got, c.rounds)
		}
	}
	if got := H1.Protocol().Rounds(40, 120_000, 6); got != 7 {
		t.Errorf("h1: 40 requests over 6 connections take %d rounds; want 7 waves", got)
	}
}

// Every protocol is registered once under its own name, and "" is the
// default's.
func TestRegistry(t *testing.T) {
	seen := map[Proto]bool{}
	for _, p := range Protocols() {
		if seen[p.Name()] || p.Name().Protocol() != p {
			t.Errorf("%s is registered twice, or found as another", p.Name())
		}
		seen[p.Name()] = true
	}
	if Proto("").Protocol().Name() != DefaultProto || Proto("spdy").Protocol() != nil {
		t.Error(`"" should find the default protocol, and an unknown name none`)
	}
	if strings.Join(Names(), ",") != "h1,h1s,h2,h2c,h3" {
		t.Errorf("names %v", Names())
	}
}

func TestConfig(t *testing.T) {
	for _, c := range []struct {
		c     Config
		label string
		err   string
	}{
		{Config{}, "", ""},
		{Config{Proto: H1, TLS: TLS12}, "", ""},
		{Config{Proto: H1S}, "h1s, TLS 1.3", ""},
		{Config{Proto: H2, TLS: TLS12}, "h2, TLS 1.2", ""},
		{Config{Proto: H3}, "h3, TLS 1.3", ""},
		{Config{Proto: H2C, TLS: TLS13}, "h2c", ""},
		{Config{Proto: "spdy"}, "", `protocol "spdy" is unknown; want h1, h1s, h2, h2c or h3`},
		{Config{Proto: H2, TLS: "1.0"}, "", `TLS version "1.0" is unknown`},
		{Config{Proto: H3, TLS: TLS12}, "", "h3 runs TLS 1.3 only"},
	} {
		err := c.c.Validate()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: %v; want an error containing %q", c.c, err, c.err)
			}
			continue
		}
		if err != nil || c.c.Label() != c.label {
			t.Errorf("%+v: label %q, %v; want %q", c.c, c.c.Label(), err, c.label)
		}
	}
}

// The round trips before a first request: TCP's one, TLS 1.3's one and
// TLS 1.2's two (one resumed); QUIC's one carries TLS's.
func TestHandshake(t *testing.T) {
	for _, c := range []struct {
		c       Config
		resumed bool
		want    float64
	}{
		{Config{}, false, 1},
		{Config{Proto: H1S}, false, 2},
		{Config{Proto: H1S}, true, 2},
		{Config{Proto: H1S, TLS: TLS12}, false, 3},
		{Config{Proto: H2, TLS: TLS12}, true, 2},
		{Config{Proto: H2C, TLS: TLS12}, false, 1},
		{Config{Proto: H3}, false, 1},
	} {
		if got := c.c.Handshake(c.resumed); got != c.want {
			t.Errorf("%+v, resumed %v: %v round trips; want %v", c.c, c.resumed, got, c.want)
		}
	}
}

// Only h3 reads Go's time itself.
func TestWallClock(t *testing.T) {
	for _, p := range Protocols() {
		if got := p.WallClock() != ""; got != (p.Name() == H3) {
			t.Errorf("%s: wall clock %q", p.Name(), p.WallClock())
		}
	}
}
