// Package synctest shows netemu inside a testing/synctest bubble: code
// that reads the wall clock (time.Sleep between retries, a context
// timeout, http.Client.Timeout) runs unchanged against the emulated
// network, and its timing is exact, because the network and the code
// share the bubble's clock. It holds only tests; run them with
//
//	go test -v ./examples/synctest
package synctest
