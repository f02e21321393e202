//go:build !unix

package proxy

import "net"

// waitRead waits for an emulated connection only: elsewhere than Unix a
// kernel socket's Read waits, with the buffer taken. It returns the
// error a read would return, or nil when there is data.
func waitRead(c net.Conn) error {
	if c, ok := c.(interface{ WaitRead() error }); ok {
		return c.WaitRead()
	}
	return nil
}
