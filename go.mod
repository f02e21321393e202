module github.com/netemu/netemu

go 1.26.8

require (
	github.com/google/gopacket v1.1.19 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/time v0.16.0 // indirect
	gvisor.dev/gvisor v0.0.0-20260905035102-160fafc42237 // indirect
)
