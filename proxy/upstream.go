package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// checkTimeout bounds CheckUpstream: the name's lookup and the connect
// together.
const checkTimeout = 5 * time.Second

// CheckUpstream resolves and connects to addr (host:port), a forward's
// upstream, once, with the system's resolver and a plain dialer, so that
// a typo fails at the start rather than on the first connection carried.
// The upstream sees that connection open and close at once: a server
// that serves one client takes it for its client. The error names addr
// and says what failed: the address, the lookup, a refusal, another
// failure to connect; it ends within 5 s, or when ctx does.
func CheckUpstream(ctx context.Context, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if _, err := net.DefaultResolver.LookupHost(ctx, host); err != nil {
		return fmt.Errorf("upstream %s does not resolve: %v", addr, err)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("upstream %s refuses connections; start it first", addr)
		}
		return fmt.Errorf("upstream %s: %v", addr, err)
	}
	return c.Close()
}
