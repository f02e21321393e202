package bench

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// realChunk is what each operation of BenchmarkRealGoodput moves, through
// the emulator and then through kernel loopback.
const realChunk = 64 << 20

// ioSize is the size of each Write and Read call on both paths.
const ioSize = 256 << 10

// BenchmarkRealGoodput moves realChunk bytes per operation over one TCP
// connection between the emulated hosts — real clock, unshaped link (no
// delay, unlimited rate), MTU 1500, no delayed-ACK stage — and then the
// same bytes over a kernel loopback TCP connection (127.0.0.1) in the same
// process. It reports both goodputs in Gbit/s, their ratio, and the CPU
// time the process spent per emulated packet (both directions counted),
// for each TCP of the emulated hosts (/netemu, /gvisor).
func BenchmarkRealGoodput(b *testing.B) {
	for _, impl := range tcpstack.Impls {
		b.Run(string(impl), func(b *testing.B) { realGoodput(b, impl) })
	}
}

func realGoodput(b *testing.B, impl tcpstack.Impl) {
	n, err := emu.New(emu.Config{Clock: emu.Real, Seed: 1, TCP: tcpstack.TCPConfig{Impl: impl}})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	emuConn, emuPeer := emuPair(b, n)
	defer emuConn.Close()
	defer emuPeer.Close()
	kConn, kPeer := kernelPair(b)
	defer kConn.Close()
	defer kPeer.Close()

	// Warm both paths (slow start, buffer auto-tuning, pools).
	move(b, emuPeer, emuConn, realChunk/4)
	move(b, kPeer, kConn, realChunk/4)

	var emuTime, kTime, cpu time.Duration
	var acks, data uint64
	for b.Loop() {
		st0 := n.Stats()
		c0 := cpuTime()
		t0 := time.Now()
		move(b, emuPeer, emuConn, realChunk)
		emuTime += time.Since(t0)
		cpu += cpuTime() - c0
		st1 := n.Stats()
		acks += st1.Link[link.AtoB].Packets - st0.Link[link.AtoB].Packets
		data += st1.Link[link.BtoA].Packets - st0.Link[link.BtoA].Packets

		t0 = time.Now()
		move(b, kPeer, kConn, realChunk)
		kTime += time.Since(t0)
	}
	bits := float64(b.N) * realChunk * 8
	emuGbps := bits / emuTime.Seconds() / 1e9
	kGbps := bits / kTime.Seconds() / 1e9
	b.ReportMetric(emuGbps, "emu-Gbit/s")
	b.ReportMetric(kGbps, "kernel-Gbit/s")
	b.ReportMetric(emuGbps/kGbps, "emu/kernel")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(acks+data)/1e3, "cpu-µs/pkt")
	b.ReportMetric(float64(acks)/float64(data), "acks/data-pkt")
	if st := n.Stats(); st.Link[0].Drops.Total()+st.Link[1].Drops.Total() > 0 {
		b.Errorf("drops on an unshaped link: %v, %v", st.Link[0].Drops, st.Link[1].Drops)
	}
}

// emuPair connects the client to the server of n and returns both ends.
func emuPair(b *testing.B, n *emu.Net) (client, server net.Conn) {
	ln, err := n.Listen(5001)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return pair(b, ln, func() (net.Conn, error) { return n.Dial(context.Background(), 5001) })
}

// kernelPair connects two kernel TCP sockets over loopback.
func kernelPair(b *testing.B) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return pair(b, ln, func() (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) })
}

func pair(b *testing.B, ln net.Listener, dial func() (net.Conn, error)) (client, server net.Conn) {
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	client, err := dial()
	if err != nil {
		b.Fatal(err)
	}
	a := <-ch
	if a.err != nil {
		b.Fatal(a.err)
	}
	return client, a.c
}

// move writes size bytes to w on another goroutine and reads them from r.
func move(b *testing.B, w, r net.Conn, size int) {
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, ioSize)
		for left := size; left > 0; {
			m, err := w.Write(buf[:min(left, len(buf))])
			if err != nil {
				errc <- err
				return
			}
			left -= m
		}
		errc <- nil
	}()
	buf := make([]byte, ioSize)
	var err error
	for left := size; left > 0 && err == nil; {
		var m int
		m, err = r.Read(buf[:min(left, len(buf))])
		left -= m
	}
	if werr := <-errc; werr != nil {
		err = werr
	}
	if err != nil {
		b.Fatal(fmt.Errorf("moving %d bytes: %w", size, err))
	}
}
