package cli

import (
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/workloads"
)

// checkNeeds refuses a workload that needs what the emulator as asked
// for does not give (workloads.Needs), naming the flag that gives it: the
// real clock on the virtual clock, kernel TCP on the emulated hosts.
// Compare runs the emulator on the virtual clock, so it points to run.
func (o *Options) checkNeeds(clk emu.ClockMode, ws []workloads.Workload) error {
	cmd := o.cmd.Name
	if o.Backend != (experiment.Emulated{}).Name() {
		return nil
	}
	for _, w := range ws {
		for _, n := range workloads.Needs(w) {
			param := "--" + n.Param + " " + n.Value
			switch {
			case n.Of == workloads.RealClock && clk == emu.Virtual && o.cmd.BothBackends:
				return Usagef("compare %s %s: compare runs the emulator on the virtual clock, and %s; use netemu run %s %s --clock real, or --backend kernel", o.kind.Name, param, n.Why, o.kind.Name, param)
			case n.Of == workloads.RealClock && clk == emu.Virtual:
				return Usagef("%s %s %s: %s; add --clock real", cmd, o.kind.Name, param, n.Why)
			case n.Of == workloads.KernelTCP && o.cmd.BothBackends:
				return Usagef("compare %s %s: %s, which compare cannot run on the emulator: use netemu run --backend kernel", o.kind.Name, param, n.Why)
			case n.Of == workloads.KernelTCP:
				return Usagef("%s %s %s: %s: add --backend kernel", cmd, o.kind.Name, param, n.Why)
			}
		}
	}
	return nil
}
