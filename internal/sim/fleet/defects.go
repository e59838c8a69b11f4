package fleet

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/gputools"
	"github.com/seamdc/seam/internal/inventory"
)

// Defect kinds: what can be wrong with a node or a tray after
// handover.
const (
	SlowLink      = "slow-link"      // target a node: its scale-up bandwidth is Value (default 0.5) of healthy
	HotGPU        = "hot-gpu"        // target a node, GPU: it runs Value (default 25) K hot and throttles
	ECCErrors     = "ecc-errors"     // target a node, GPU: Value (default 2) uncorrectable ECC errors, a row remap pending
	FailedDiag    = "failed-diag"    // target a node, GPU, Test (default Targeted Stress): that DCGM test fails
	MissingPSU    = "missing-psu"    // target a PSU (ma/r01/shelf-05/psu-3): its bay is empty
	SwappedPart   = "swapped-part"   // target a part, PSU or tray: it carries another serial (Serial, or a new one)
	WrongSlot     = "wrong-slot"     // target a tray, With another of its kind: they sit in each other's place
	FirmwareDrift = "firmware-drift" // target a tray: Component (default bios) runs Version (default the next)
	MissingTray   = "missing-tray"   // target a tray: it is gone from its rack, its BMC silent
	ExtraTray     = "extra-tray"     // target a rack, Slot: a compute tray the inventory does not list sits there
)

// DefectKinds lists the defect kinds.
var DefectKinds = []string{SlowLink, HotGPU, ECCErrors, FailedDiag, MissingPSU, SwappedPart, WrongSlot, FirmwareDrift, MissingTray, ExtraTray}

// Defect is one defect in force.
type Defect struct {
	Kind      string  `json:"kind"`
	Target    string  `json:"target"`
	With      string  `json:"with,omitempty"`
	GPU       int     `json:"gpu,omitempty"`
	Test      string  `json:"test,omitempty"`
	Value     float64 `json:"value,omitempty"`
	Serial    string  `json:"serial,omitempty"`
	Component string  `json:"component,omitempty"`
	Version   string  `json:"version,omitempty"`
	Slot      int     `json:"slot,omitempty"`
}

func (d Defect) String() string { return d.Kind + " on " + d.Target }

// Defects lists the defects in force, in the order they were added.
func (f *Fleet) Defects() []Defect { return slices.Clone(f.defects) }

// AddDefect puts a defect in force (replacing one of the same kind on
// the same target); an unknown kind or a target it cannot act on is an
// error naming what would do.
func (f *Fleet) AddDefect(d Defect) error {
	if err := f.check(&d); err != nil {
		return err
	}
	f.defects = slices.DeleteFunc(f.defects, func(x Defect) bool { return x.Kind == d.Kind && x.Target == d.Target })
	f.defects = append(f.defects, d)
	f.rebuild()
	return nil
}

// ClearDefect ends a defect.
func (f *Fleet) ClearDefect(kind, target string) error {
	n := len(f.defects)
	f.defects = slices.DeleteFunc(f.defects, func(x Defect) bool { return x.Kind == kind && x.Target == target })
	if len(f.defects) == n {
		return fmt.Errorf("no %s defect on %s in force", kind, target)
	}
	f.rebuild()
	return nil
}

// check validates a defect and fills in its defaults.
func (f *Fleet) check(d *Defect) error {
	node := func() (*Node, error) {
		n, err := f.Node(d.Target)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		if d.GPU < 0 || d.GPU >= len(n.gpus) {
			return nil, fmt.Errorf("%s: node %s has GPUs 0 to %d, not %d", d, n.Name, len(n.gpus)-1, d.GPU)
		}
		return n, nil
	}
	switch d.Kind {
	case SlowLink, HotGPU, ECCErrors, FailedDiag:
		if _, err := node(); err != nil {
			return err
		}
		def := map[string]float64{SlowLink: 0.5, HotGPU: 25, ECCErrors: 2}[d.Kind]
		if d.Value == 0 {
			d.Value = def
		}
		if d.Kind == SlowLink && (d.Value <= 0 || d.Value > 1) {
			return fmt.Errorf("%s: value %g: a slow link runs at a share of healthy, 0 to 1", d, d.Value)
		}
		if d.Kind == FailedDiag {
			if d.Test == "" {
				d.Test = "Targeted Stress"
			}
			if !gputools.KnownDiagTest(d.Test) {
				return fmt.Errorf("%s: no DCGM test %q (tests: %s)", d, d.Test, strings.Join(gputools.DiagTestNames(), ", "))
			}
		}
	case MissingPSU:
		if f.psu(d.Target) == nil {
			return fmt.Errorf("%s: no PSU %q (PSUs are named like %s)", d, d.Target, f.examplePSU())
		}
	case SwappedPart:
		if !f.hasPart(d.Target) {
			return fmt.Errorf("%s: no tray, part or PSU %q (for example %s/gpu-2)", d, d.Target, f.exampleTray(inventory.KindCompute))
		}
	case WrongSlot:
		a, b := f.byKey[d.Target], f.byKey[d.With]
		switch {
		case a == nil:
			return fmt.Errorf("%s: no tray %q (for example %s)", d, d.Target, f.exampleTray(inventory.KindCompute))
		case b == nil:
			return fmt.Errorf("%s: with: no tray %q: name the tray it changes places with", d, d.With)
		case a.Kind != b.Kind:
			return fmt.Errorf("%s: %s is a %s tray and %s a %s tray: only trays of one kind fit each other's slots", d, a.Key, a.Kind, b.Key, b.Kind)
		case a == b:
			return fmt.Errorf("%s: a tray cannot change places with itself", d)
		}
	case FirmwareDrift:
		t := f.byKey[d.Target]
		if t == nil {
			return fmt.Errorf("%s: no tray %q (for example %s)", d, d.Target, f.exampleTray(inventory.KindCompute))
		}
		if d.Component == "" {
			d.Component = "bios"
		}
		if d.Version == "" {
			d.Version = nextVersion(f.declaredFirmware(t)[d.Component])
		}
	case MissingTray:
		if f.byKey[d.Target] == nil {
			return fmt.Errorf("%s: no tray %q (for example %s)", d, d.Target, f.exampleTray(inventory.KindCompute))
		}
	case ExtraTray:
		r := f.rackBy[d.Target]
		if r == nil {
			return fmt.Errorf("%s: no rack %q (racks are named like %s)", d, d.Target, f.racks[0].Key)
		}
		if f.template(r) == nil {
			return fmt.Errorf("%s: rack %s has no compute tray to take as the extra one's model", d, r.Key)
		}
		if d.Slot == 0 {
			d.Slot = f.freeSlot(r)
		}
		if d.Slot == 0 || f.occupied(r, d.Slot) {
			return fmt.Errorf("%s: slot U%d of rack %s is taken", d, d.Slot, r.Key)
		}
	default:
		return fmt.Errorf("unknown defect %q (defects: %s)", d.Kind, strings.Join(DefectKinds, ", "))
	}
	return nil
}

func (f *Fleet) examplePSU() string {
	for _, t := range f.trays {
		if len(t.PSUs) > 0 {
			return t.PSUs[0].Key
		}
	}
	return "none: the inventory has no power shelves"
}

func (f *Fleet) exampleTray(k inventory.Kind) string {
	for _, t := range f.trays {
		if t.Kind == k {
			return t.Key
		}
	}
	return "none"
}

func (f *Fleet) psu(key string) *PSU {
	if t := f.byKey[key[:max(strings.LastIndexByte(key, '/'), 0)]]; t != nil {
		for _, p := range t.PSUs {
			if p.Key == key {
				return p
			}
		}
	}
	return nil
}

// hasPart reports whether key is a tray, a PSU or a part of a tray.
func (f *Fleet) hasPart(key string) bool {
	if f.byKey[key] != nil || f.psu(key) != nil {
		return true
	}
	id, ok := f.g.Lookup(key)
	return ok && f.byKey[f.g.El(f.g.Parent(id)).Key] != nil
}

// nextVersion is a version with its last number one higher: 1.4.2 →
// 1.4.3, 25.06-1 → 25.06-2.
func nextVersion(v string) string {
	loc := regexp.MustCompile(`\d+`).FindAllStringIndex(v, -1)
	if len(loc) == 0 {
		return v + ".1"
	}
	last := loc[len(loc)-1]
	n, _ := strconv.Atoi(v[last[0]:last[1]])
	return v[:last[0]] + strconv.Itoa(n+1) + v[last[1]:]
}

// template is the compute tray an extra tray in rack r is modelled on.
func (f *Fleet) template(r *Rack) *Tray {
	for _, t := range f.trays {
		if t.Kind == inventory.KindCompute && !t.Extra && f.declaredRack(t) == r {
			return t
		}
	}
	return nil
}

// freeSlot is the lowest U of rack r no tray takes (0: none).
func (f *Fleet) freeSlot(r *Rack) int {
	height := 48
	if e := f.g.El(r.id); e.HeightU > 0 {
		height = e.HeightU
	}
	for s := 1; s <= height; s++ {
		if !f.occupied(r, s) {
			return s
		}
	}
	return 0
}

// occupied reports whether a tray of the rack's design takes U s (or a
// switch, which has no tray here).
func (f *Fleet) occupied(r *Rack, s int) bool {
	for _, c := range f.g.Children(r.id) {
		e := f.g.El(c)
		if e.Kind.IsTray() && s >= e.Slot && s < e.Slot+max(e.HeightU, 1) {
			return true
		}
	}
	for _, d := range f.defects {
		if d.Kind == ExtraTray && d.Target == r.Key && d.Slot == s {
			return true
		}
	}
	return false
}

// failures of the DCGM tests a node's defects make fail.
func diagWarning(d Defect) (test, warning string) {
	switch d.Kind {
	case HotGPU:
		return "Targeted Power", fmt.Sprintf("Thermal violations totaling %.1f seconds started at %.1f seconds into the test for GPU %d", 6+d.Value/2, 3.1, d.GPU)
	case ECCErrors:
		return "Page Retirement/Row Remap", fmt.Sprintf("GPU %d had uncorrectable memory errors and row remapping is pending. Run nvidia-smi -r to reset the GPU.", d.GPU)
	case FailedDiag:
		return d.Test, fmt.Sprintf("GPU %d failed the %s test (a defect of the simulated node)", d.GPU, strings.ToLower(d.Test))
	}
	return "", ""
}
