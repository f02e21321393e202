package workloads

import (
	"net"

	"github.com/netemu/netemu/emu"
)

// serveOne listens on the env's server side and runs serve on the
// listener in a goroutine started with env.Go (the raw TCP workloads
// accept one connection and answer on it). stop closes the listener and
// waits for serve to return.
func serveOne(env emu.Env, port uint16, serve func(net.Listener) error) (stop func(), err error) {
	ln, err := env.Listen(port)
	if err != nil {
		return nil, err
	}
	served := make(chan error, 1)
	env.Go(func() {
		served <- serve(ln)
	})
	return func() {
		ln.Close()
		<-served
	}, nil
}

// pattern returns n bytes of a fixed pattern.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}
