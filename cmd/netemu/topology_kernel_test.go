package main

import (
	"strings"
	"testing"
)

// Kernel mode runs a topology: run gives its flows and links as the
// emulator's run does, and compare each flow's goodput on both backends
// with their ratio and Jain's index. Only the tables' shape is checked:
// kernel TCP's figures are real time's.
func TestTopologyKernel(t *testing.T) {
	needRoot(t)
	code, out, errOut := runNetemu("run", "share", "--topology", "dumbbell:2", "--access-rtt", "16ms,162ms", "--rate", "20mbit", "--duration", "1s", "--backend", "kernel")
	if code != 0 {
		t.Fatalf("run --backend kernel: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"dumbbell:2 access-rtt 16ms,162ms, Jain's index", "c1>s1", "c2>s2", "66.0 ms", "212.0 ms", "bottleneck  right>left"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --backend kernel has no %q:\n%s", want, out)
		}
	}
	code, out, errOut = runNetemu("compare", "share", "--topology", "dumbbell:2", "--access-rtt", "16ms,162ms", "--rate", "20mbit", "--duration", "1s")
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"kernel/emulated", "c1>s1", "c2>s2", "Jain's index", "link tun"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare has no %q:\n%s", want, out)
		}
	}
}
