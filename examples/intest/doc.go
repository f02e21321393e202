// Package intest shows netemu inside ordinary Go tests, with package
// emutest: an HTTP GET timed in round trips, a connection pool's savings,
// the 40 ms Nagle stall, and a context timeout at its exact instant. It
// holds only tests; run them with
//
//	go test -v ./examples/intest
package intest
