// Package netemu is the root of a userspace network emulator: two gVisor
// TCP/IP stacks joined by a simulated link, on a deterministic virtual
// clock or the real one, with workloads that reproduce published network
// experiments and a kernel mode that runs them over kernel TCP.
//
// The command is cmd/netemu; the packages and their layers are described
// in docs/ARCHITECTURE.md. This package holds no code: only the test that
// keeps that description true.
package netemu
