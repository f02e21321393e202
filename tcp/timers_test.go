package tcp

import (
	"testing"
	"time"
)

// Timers Linux keeps on its timer wheel run on a jiffy tick, rounded up
// to their level's granularity (kernel/time/timer.c calc_wheel_index).
// The figures are Linux 6.18's at HZ 250: a SYN sent from a namespace to
// an address that never answers was retransmitted at gaps of 1.024,
// 1.024, 1.024, 1.024, 2.016, 4.064, 8.192 and 16.128 s after its second
// transmission (tshark on the peer's veth; tcp_syn_linear_timeouts 4,
// then doubling). 1 s is 250 jiffies, on level 1 (8-jiffy buckets): 256;
// 2 s is 500, still level 1: 504; 4 s to 16 s are on level 2 (64-jiffy
// buckets), so their gaps depend on where the chain stands against 64:
// the kernel's started 16 jiffies past a multiple of 64.
func TestTimerWheelMatchesLinux(t *testing.T) {
	hz := 250
	at := jiffyInstant((uint64(uint32(-300*hz))+64*1000)&^63+16, hz)
	waits := []time.Duration{1, 1, 1, 1, 2, 4, 8, 16}
	want := []time.Duration{1024, 1024, 1024, 1024, 2016, 4064, 8192, 16128}
	for i, w := range waits {
		next := onWheel(at, w*time.Second)
		if got := next - at; got != want[i]*time.Millisecond {
			t.Errorf("timer %d, armed at %v for %v s: ran %v later; want %v ms", i, at, int(w), got, int(want[i]))
		}
		at = next
	}
	// A level starts at its LVL_START: 503 jiffies are on level 1, 504
	// on level 2 (64-jiffy buckets), from a jiffy 16 past a multiple of
	// 64: 504 and 560 jiffies later.
	j16 := jiffyInstant((uint64(uint32(-300*hz))+64*1000)&^63+16, hz)
	for d, want := range map[time.Duration]time.Duration{503: 504, 504: 560} {
		if got := onWheel(j16, d*4*time.Millisecond) - j16; got != want*4*time.Millisecond {
			t.Errorf("%d jiffies ran %v later; want %d jiffies", d, got, want)
		}
	}
	// Level 0: a delayed ACK of 10 jiffies runs on the eleventh tick,
	// 44 ms after it was armed on a tick, 40.1 ms when armed 3.9 ms
	// into a jiffy.
	tick := jiffyInstant(uint64(uint32(-300*hz))+1000, hz)
	if got := onWheel(tick, 40*time.Millisecond) - tick; got != 44*time.Millisecond {
		t.Errorf("10 jiffies armed on a tick ran %v later; want 44ms", got)
	}
	late := tick + 3900*time.Microsecond
	if got := onWheel(late, 40*time.Millisecond) - late; got != 40100*time.Microsecond {
		t.Errorf("10 jiffies armed 3.9 ms into a jiffy ran %v later; want 40.1ms", got)
	}
}

// The wheel never runs a timer early, nor later than its level's
// granularity; a timer already due runs on the next tick; beyond the
// last level the expiry is cut to WHEEL_TIMEOUT_MAX.
func TestTimerWheelBounds(t *testing.T) {
	for _, hz := range []int{100, 250, 1000} {
		depth := uint(9)
		if hz <= 100 {
			depth = 8
		}
		for clk := uint64(1 << 32); clk < 1<<32+70; clk += 7 {
			for d := uint64(0); d < 1<<20; d = d*3 + 1 {
				got := wheelExpiry(clk+d, clk, hz)
				lvl := uint(0)
				for lvl < depth-1 && d >= wheelLevelStart(lvl+1) {
					lvl++
				}
				gran := uint64(1) << (lvl * wheelClkShift)
				if got <= clk+d || got > clk+d+gran {
					t.Fatalf("HZ %d: armed at %d for %d jiffies: runs at %d; want after %d, within %d", hz, clk, d, got, clk+d, gran)
				}
			}
			if got := wheelExpiry(clk-5, clk, hz); got != clk+1 {
				t.Errorf("HZ %d: a timer 5 jiffies overdue runs at %d; want the next tick, %d", hz, got, clk+1)
			}
		}
		clk := uint64(1 << 40)
		cutoff := wheelLevelStart(depth)
		max := clk + cutoff - 1<<((depth-1)*wheelClkShift)
		if got := wheelExpiry(clk+4*cutoff, clk, hz); got <= max || got > max+1<<((depth-1)*wheelClkShift) {
			t.Errorf("HZ %d: a timer 4 cut-offs away runs at %d; want the last level's bucket after %d", hz, got, max)
		}
	}
}
