package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/topo"
	"github.com/netemu/netemu/workloads"
)

// dumbbellCase is share on a dumbbell of two flows, 16 ms and 162 ms
// from the bottleneck's left end, 20 mbit.
func dumbbellCase(d time.Duration) Case {
	access := []time.Duration{16 * time.Millisecond, 162 * time.Millisecond}
	return Case{
		Workload: workloads.Share{Flows: 1, Duration: d},
		Link:     link.Config{Delay: 10 * time.Millisecond, Rate: 20e6, Qdisc: link.Qdisc{Limit: 100}},
		Seed:     1,
		Shape: &Shape{Name: "dumbbell:2", Build: func(lc link.Config) (topo.Topology, []topo.Flow) {
			return topo.Dumbbell(2, access, lc)
		}},
	}
}

// Kernel mode runs a shape as the emulator does: a row per flow, with
// the same names and round trips, a row per link direction that carried
// packets, the bridge's lateness, and the same record's fields. Only
// bounds that hold on a loaded machine are checked: each flow moved
// data, the bottleneck carried it, the shares add up.
func TestKernelShape(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("runs kernel TCP in real time (about 3 s)")
	}
	c := dumbbellCase(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, krec, err := Kernel{}.Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	_, erec, err := Emulated{}.Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	kd, ok := krec.Detail.(ShapeDetail)
	if !ok {
		t.Fatalf("kernel detail %T; want ShapeDetail", krec.Detail)
	}
	ed := erec.Detail.(ShapeDetail)
	if kd.Shape != "dumbbell:2" || len(kd.Flows) != 2 {
		t.Fatalf("kernel detail %+v", kd)
	}
	for i, f := range kd.Flows {
		e := ed.Flows[i]
		if f.Name != e.Name || f.RTT != e.RTT || f.Workload != e.Workload {
			t.Errorf("kernel flow %d: %s %v %s; emulated %s %v %s", i, f.Name, f.RTT, f.Workload, e.Name, e.RTT, e.Workload)
		}
		if f.Goodput <= 0 || f.Goodput > 20e6 {
			t.Errorf("kernel flow %s: goodput %.0f bit/s; want some, under the bottleneck's 20 mbit", f.Name, f.Goodput)
		}
	}
	if s := kd.Share[0] + kd.Share[1]; s < 0.999 || s > 1.001 || kd.Jain <= 0.5 || kd.Jain > 1 {
		t.Errorf("kernel shares %v, Jain %v", kd.Share, kd.Jain)
	}
	bottleneck := slices.IndexFunc(kd.Links, func(l LinkResult) bool { return l.Link == "bottleneck" && l.Dir == "right>left" })
	if bottleneck < 0 || kd.Links[bottleneck].Delivered < 100 || kd.Links[bottleneck].Utilisation <= 0.1 || kd.Links[bottleneck].Utilisation > 1.05 {
		t.Errorf("kernel links %+v; want the bottleneck's right>left busy", kd.Links)
	}
	var names []string
	for _, l := range kd.Links {
		names = append(names, l.Link+" "+l.Dir)
	}
	for _, l := range ed.Links {
		if !slices.Contains(names, l.Link+" "+l.Dir) {
			t.Errorf("the emulator's link direction %s %s carried packets, kernel mode's did not: %v", l.Link, l.Dir, names)
		}
	}
	if krec.Backend != "kernel" || krec.TCP != "linux" || krec.Kernel == nil || krec.Kernel.Link != kernel.TUN ||
		krec.LateMeanUs == nil || krec.LateP99Us == nil || krec.LateMaxUs == nil || krec.Drops == nil || krec.TUNWriteErrors == nil {
		t.Errorf("kernel record lacks the backend's fields: %+v", krec.Extra)
	}
	kj, _ := json.Marshal(krec)
	ej, _ := json.Marshal(erec)
	var kf, ef map[string]any
	json.Unmarshal(kj, &kf)
	json.Unmarshal(ej, &ef)
	for k := range ef {
		if _, ok := kf[k]; !ok && !slices.Contains([]string{"seed", "host_noise", "trace_hash", "max_cwnd_bytes", "srtt_ms", "retransmits"}, k) {
			t.Errorf("the emulated record has %q, the kernel's not", k)
		}
	}
}

// Kernel mode refuses the netem link for a shape, naming the TUN link.
func TestKernelShapeRefusesNetem(t *testing.T) {
	c := dumbbellCase(time.Second)
	_, _, err := Kernel{Via: kernel.Netem}.Run(context.Background(), c)
	if !errors.Is(err, kernel.ErrUnsupported) || !strings.Contains(err.Error(), "TUN") {
		t.Errorf("Run over netem = %v; want ErrUnsupported naming the TUN link", err)
	}
}
