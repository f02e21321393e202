package toxiproxy

import (
	"time"

	"github.com/netemu/netemu/emu"
)

// SetCloseNet makes s close its connections' networks with f, and wait
// for them at most wait before it says which are stuck; before Start.
func SetCloseNet(s *Server, f func(n *emu.Net) error, wait time.Duration) {
	s.closeNet, s.closeWait = f, wait
}

// Reapplied is how many toxics s has applied to connections, one by one.
func Reapplied(s *Server) uint64 { return s.reapplied.Load() }

// OpenConns is how many connections s has open, each with its network:
// the slots they hold (Config.MaxConns).
func OpenConns(s *Server) int { return len(s.slots) }
