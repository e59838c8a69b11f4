package fleet

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/gputools"
)

// Status is a node's state for the control interface.
type Status struct {
	Name       string  `json:"name"`
	Key        string  `json:"key"`
	Rack       string  `json:"rack"` // where it sits
	Slot       int     `json:"slot"`
	State      State   `json:"state"`
	DrawW      float64 `json:"draw_w"`
	DemandW    float64 `json:"demand_w"`
	Limit      Limit   `json:"limit"`
	Capped     bool    `json:"capped"`
	Domain     string  `json:"domain"`
	LinkFactor float64 `json:"link_factor"`
	Extra      bool    `json:"extra,omitempty"`
	Removed    bool    `json:"removed,omitempty"`
}

// Status is the node's state.
func (n *Node) Status() Status {
	return Status{Name: n.Name, Key: n.Tray.Key, Rack: n.Tray.rack.Key, Slot: n.Tray.Slot, State: n.state, DrawW: round2(n.drawW),
		DemandW: round2(n.demandW), Limit: n.Limit(), Capped: n.capped, Domain: n.Domain, LinkFactor: n.link, Extra: n.Tray.Extra, Removed: n.Tray.Removed}
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// GPU names and memory by the design's GPU model (assumed for parts no
// public capture shows).
var gpuModels = map[string]struct {
	name   string
	memMiB int
}{
	"B300": {"NVIDIA GB300", 284208},
	"B200": {"NVIDIA GB200", 189471},
}

// pciBus is where a Grace-Blackwell tray's four GPUs sit (assumed after
// GB200 trays: PCI domains 8, 9, 0x18, 0x19).
var pciBus = []string{"00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"}

// GPUView is what the node's GPU tools report at now: nvidia-smi's
// fields, dcgmi's failing tests, the scale-up link nccl-tests measures.
func (f *Fleet) GPUView(n *Node, now time.Time) *gputools.Node {
	t := n.Tray
	v := &gputools.Node{Name: n.Name, Key: t.Key, Powered: n.state != Off && !t.Removed && !t.rack.dark, Time: now,
		Driver: "580.65.06", CUDA: "13.0", DCGM: n.dcgm, Domain: n.Domain, LinkFactor: n.link,
		ChassisSerial: t.Serial, Slot: t.Slot, TrayIndex: f.trayIndex(t)}
	for _, g := range n.gpus {
		m, ok := gpuModels[g.model]
		if !ok {
			m.name, m.memMiB = strings.TrimSpace("NVIDIA "+g.model), 81559
		}
		serial := f.partSerial(t, g.key)
		perGPU := t.DesignW * (1 - OtherShare) / float64(max(len(n.gpus), 1))
		gv := gputools.GPU{Index: g.index, Name: m.name, Serial: serial, UUID: gputools.GPUUUID(serial), ModuleID: g.index + 1,
			PowerW: round2(g.powerW), LimitW: g.limitW, DefaultLimitW: math.Round(perGPU), MinLimitW: 200, MaxLimitW: math.Round(perGPU),
			TempC: g.tempC, MemTempC: g.memTempC, SMClock: int(maxSMClock * g.clock), MaxSMClock: maxSMClock, MemClock: memClock,
			Utilization: int(math.Round(100 * n.util)), MemUtilization: int(math.Round(40 * n.util)), MemTotalMiB: m.memMiB,
			MemUsedMiB: int(float64(m.memMiB) * 0.7 * n.util), Throttle: g.throttle,
			ECCCorrected: g.eccCorr, ECCUncorrected: g.eccUncorr, ECCCorrectedTotal: g.eccCorr, ECCUncorrectedTotal: g.eccUncorr,
			RemappedUncorrected: g.remapped, RemapPending: g.remapWait}
		if g.index < len(pciBus) {
			gv.PCIBusID = pciBus[g.index]
		}
		if !v.Powered {
			gv.PowerW, gv.Utilization, gv.Throttle = 0, 0, 0
		}
		v.GPUs = append(v.GPUs, gv)
	}
	for _, ft := range n.failures {
		v.Failures = append(v.Failures, gputools.DiagFailure{Test: ft.test, GPU: ft.gpu, Warning: ft.warning})
	}
	return v
}

// partSerial is a part's serial as it physically is.
func (f *Fleet) partSerial(t *Tray, key string) string {
	if s, ok := t.partSerials[key]; ok {
		return s
	}
	if t.Extra {
		return newSerial(key)
	}
	if id, ok := f.g.Lookup(key); ok && f.g.El(id).Identity != nil {
		return f.g.El(id).Identity.Serial
	}
	return ""
}

// trayIndex is a compute tray's index among its rack's compute trays,
// from the bottom (nvidia-smi's platform.tray_index).
func (f *Fleet) trayIndex(t *Tray) int {
	i := 0
	for _, x := range t.rack.trays {
		if x == t {
			return i
		}
		if x.Kind == t.Kind && !x.Removed {
			i++
		}
	}
	return i
}

// Summary counts the fleet's nodes by state, its BMCs and defects.
type Summary struct {
	Nodes   int           `json:"nodes"`
	States  map[State]int `json:"states"`
	BMCs    int           `json:"bmcs"`
	DrawW   float64       `json:"draw_w"` // what the racks draw from their PDUs
	Defects []Defect      `json:"defects"`
}

// Summary is the fleet at a glance.
func (f *Fleet) Summary() Summary {
	s := Summary{States: map[State]int{}, BMCs: len(f.BMCs()), Defects: f.Defects()}
	for _, t := range f.allTrays() {
		if t.Node != nil {
			s.Nodes++
			s.States[t.Node.state]++
		}
	}
	for _, m := range f.modules {
		s.DrawW += m.ACW
	}
	s.DrawW = round2(s.DrawW)
	if s.Defects == nil {
		s.Defects = []Defect{}
	}
	return s
}

// Describe names a node for messages: its name, key and where it sits.
func (n *Node) Describe() string {
	return fmt.Sprintf("%s (%s, %s U%d)", n.Name, n.Tray.Key, n.Tray.rack.Key, n.Tray.Slot)
}
