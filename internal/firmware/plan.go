package firmware

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/inventory"
)

// Format names the plan's JSON; it changes when its meaning does.
const Format = "seam.firmware.plan/v1"

// Plan is a rollout: what differs from the baseline, and the stages
// that bring the trays to it, by failure domain, under the policy.
type Plan struct {
	Format  string `json:"format"`
	Tool    string `json:"tool,omitempty"`
	Site    string `json:"site"`
	Module  string `json:"module,omitempty"`
	Rollout string `json:"rollout"`
	// Baseline's digest is the canonical JSON's of the firmware
	// directory: apply refuses a baseline changed since the plan.
	Baseline  Input  `json:"baseline"`
	Discovery Input  `json:"discovery"`
	Policy    Policy `json:"policy"`
	// ControlPlanes are the modules that hold a replica of a
	// control-plane service, with the services.
	ControlPlanes map[string][]string `json:"control_planes,omitempty"`
	Summary       Summary             `json:"summary"`
	Differences   []Difference        `json:"differences"`
	// WithoutBaseline counts the trays no baseline covers, by model.
	WithoutBaseline []ModelCount `json:"without_baseline"`
	Unreached       []Unreached  `json:"unreached"`
	Stages          []*Stage     `json:"stages"`
}

// Input is a file or directory a plan was made from, with its digest.
type Input struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// Summary counts the plan.
type Summary struct {
	Trays      int `json:"trays"`       // in scope: compute, scale-up switch and power shelf trays
	NoBaseline int `json:"no_baseline"` // no baseline covers them
	Unreached  int `json:"unreached"`   // not read where the inventory puts them
	UpToDate   int `json:"up_to_date"`
	Differ     int `json:"differ"`    // trays that run something else than their baseline
	HeldBack   int `json:"held_back"` // of those, compute trays whose node another owner holds
	Updates    int `json:"updates"`   // component updates planned
	Nodes      int `json:"nodes"`     // nodes updated
	Stages     int `json:"stages"`
}

// Difference is how many trays of a baseline run a component's version
// From instead of To ("" From: their BMC does not report it).
type Difference struct {
	Baseline  string `json:"baseline"`
	Component string `json:"component"`
	From      string `json:"from"`
	To        string `json:"to"`
	Trays     int    `json:"trays"`
}

// ModelCount is a tray model and how many trays.
type ModelCount struct {
	Model string `json:"model"`
	Trays int    `json:"trays"`
}

// Unreached is a tray the discovery did not read where the inventory
// puts it: it is not updated.
type Unreached struct {
	Tray string `json:"tray"`
	Node string `json:"node,omitempty"`
	Why  string `json:"why"`
}

// Stage is one step of the rollout: racks updated together.
type Stage struct {
	Number         int      `json:"stage"`
	Canary         bool     `json:"canary,omitempty"`
	FailureDomains []string `json:"failure_domains"`
	Modules        []string `json:"modules"`
	Racks          []string `json:"racks"`
	// Nodes are every node out of the pool while the stage runs: those
	// updated, those its updates stop (a scale-up domain's nodes while
	// its switch trays reset), and those held already by another owner.
	Nodes   []StageNode   `json:"nodes"`
	Holds   []PlannedHold `json:"holds"`
	Skipped []Skipped     `json:"skipped"`
	Trays   []*TrayPlan   `json:"trays"`
	// Exceeds says which limit of the policy the stage passes, when one
	// unit it must take whole (a rack, a scale-up domain) is larger.
	Exceeds string `json:"exceeds,omitempty"`
	// BlastRadius is what the stage's updates take down (--what-if):
	// each tray with a host or chassis reset fails for the while, a
	// BMC's own reset fails its BMC (the tray runs unmanaged).
	BlastRadius *inventory.Impact `json:"blast_radius,omitempty"`
}

// Node actions in a stage.
const (
	NodeUpdate  = "update"  // its tray is updated
	NodeStopped = "stopped" // the stage's updates stop it; nothing of its own changes
	NodeHeld    = "held"    // held already by another owner: not updated
)

// StageNode is a node out of the pool during a stage.
type StageNode struct {
	Key    string `json:"key"`
	Name   string `json:"name,omitempty"`
	Action string `json:"action"`
}

// PlannedHold is a hold a stage places in the ledger.
type PlannedHold struct {
	Owner hold.Owner `json:"owner"`
	Nodes []string   `json:"nodes"` // keys, sorted
	Why   string     `json:"why"`
}

// Skipped is a node another owner holds: not updated in its stage.
type Skipped struct {
	Key    string       `json:"key"`
	Name   string       `json:"name,omitempty"`
	Owners []hold.Owner `json:"owners"`
}

// TrayPlan is one tray's updates, in the baseline's order, the resets
// they need and the checks after.
type TrayPlan struct {
	Key      string   `json:"key"`
	Kind     string   `json:"kind"`
	Node     string   `json:"node,omitempty"`
	Baseline string   `json:"baseline"`
	Updates  []Update `json:"updates"`
	Resets   []string `json:"resets"`
	Checks   []Check  `json:"checks"`
}

// Update is one component's update.
type Update struct {
	Component string   `json:"component"`
	From      string   `json:"from"` // "" not reported
	To        string   `json:"to"`
	SHA256    string   `json:"sha256"`
	URI       string   `json:"uri,omitempty"`
	Targets   []string `json:"targets"`
	ApplyTime string   `json:"apply_time"`
	Reset     string   `json:"reset"`
}

// Check kinds.
const (
	CheckVersion = "version" // the component's version read back from its FirmwareInventory
	CheckBurnin  = "burn-in" // the node passes burn-in before it returns to the pool
)

// Check is what is verified after a tray's updates.
type Check struct {
	Check     string `json:"check"`
	Component string `json:"component,omitempty"`
	Want      string `json:"want,omitempty"`
}

// Options are what a plan takes besides the baselines, the site and
// the discovery.
type Options struct {
	// Module limits the plan to one module's racks ("" every module).
	Module string
	// Rollout names the rollout in its holds' owners
	// (firmware:ROLLOUT-s01); "" is fw- and the baseline digest's first
	// eight hex digits.
	Rollout string
	// ControlPlanes are the modules holding a replica of a
	// control-plane service, with the services' names.
	ControlPlanes map[string][]string
	// Held are the holds already in the ledger: each node's owners, by
	// node key.
	Held map[string][]hold.Owner
	// WhatIf adds each stage's blast radius.
	WhatIf bool
	// Tool is the program and version that makes the plan.
	Tool string
	// BaselinePath and DiscoveryPath name the inputs in the plan
	// (default: the set's directory, the discovery's file).
	BaselinePath, DiscoveryPath string
}

// work is one tray's part in the plan.
type work struct {
	t       *Tray
	b       *Baseline
	updates []Update
	held    []hold.Owner // its node's holds by others
}

// runs reports whether its updates are carried out.
func (w *work) runs() bool { return len(w.updates) > 0 && len(w.held) == 0 }

// NewPlan compares the discovery with the baselines and stages the
// rollout. The set must have vetted clean (a plan of a baseline with
// errors is refused by its caller); an error is bad input: another
// site's discovery, one of part of the site, an unknown module.
func NewPlan(set *Set, s *Site, d *Discovery, opt Options) (*Plan, error) {
	racks, scope, err := inScope(s, opt.Module)
	if err != nil {
		return nil, err
	}
	declared := 0
	for _, r := range racks {
		declared += len(r.Trays)
	}
	if err := d.check(s, declared, scope); err != nil {
		return nil, err
	}
	rollout, err := rolloutName(opt.Rollout, set.Digest)
	if err != nil {
		return nil, err
	}
	p := &Plan{Format: Format, Tool: opt.Tool, Site: s.Name, Module: opt.Module, Rollout: rollout, Policy: set.Policy,
		Baseline: Input{Path: cmp.Or(opt.BaselinePath, set.Dir), Digest: set.Digest}, Discovery: Input{Path: cmp.Or(opt.DiscoveryPath, d.File), Digest: d.Digest},
		ControlPlanes: opt.ControlPlanes, Differences: []Difference{}, WithoutBaseline: []ModelCount{}, Unreached: []Unreached{}, Stages: []*Stage{}}
	byRack := p.compare(set, s, d, racks, opt.Held)
	keep := func(r *Rack) bool { return len(byRack[r]) > 0 }
	us := units(s, set.Policy.WholeScaleUpDomains, keep)
	for _, u := range us {
		u.prepare(s, byRack, opt.Held)
	}
	st := &stager{p: set.Policy, cps: opt.ControlPlanes}
	for _, u := range us {
		st.place(u)
	}
	for i, sb := range st.stages() {
		p.Stages = append(p.Stages, sb.stage(s, i+1, rollout, opt.Held, opt.WhatIf))
	}
	p.Summary.Stages = len(p.Stages)
	for _, stg := range p.Stages {
		for _, n := range stg.Nodes {
			if n.Action == NodeUpdate {
				p.Summary.Nodes++
			}
		}
	}
	return p, nil
}

// inScope are the racks a plan covers, and how to name them.
func inScope(s *Site, module string) ([]*Rack, string, error) {
	if module == "" {
		return s.Racks, "site " + s.Name, nil
	}
	var out []*Rack
	var modules []string
	for _, r := range s.Racks {
		if r.Module == module {
			out = append(out, r)
		}
		if !slices.Contains(modules, r.Module) {
			modules = append(modules, r.Module)
		}
	}
	if len(out) == 0 {
		return nil, "", fmt.Errorf("module %q: no module of %s holds racks with trays (the modules: %s)", module, s.Name, strings.Join(modules, ", "))
	}
	return out, "module " + module, nil
}

// rolloutName checks a rollout's name as its holds' owners take it.
func rolloutName(name, digest string) (string, error) {
	if name == "" {
		_, hex, _ := strings.Cut(digest, ":")
		name = "fw-" + hex[:min(8, len(hex))]
	}
	if _, err := hold.Parse(string(hold.Of(hold.Firmware, name+"-s01"))); err != nil {
		return "", fmt.Errorf("rollout %q: %w", name, err)
	}
	return name, nil
}

// compare finds each tray's updates, counts what differs, and returns
// the trays with differences by rack.
func (p *Plan) compare(set *Set, s *Site, d *Discovery, racks []*Rack, held map[string][]hold.Owner) map[*Rack][]*work {
	diffs := map[Difference]int{}
	noBaseline := map[string]int{}
	byRack := map[*Rack][]*work{}
	for _, r := range racks {
		for _, t := range r.Trays {
			p.Summary.Trays++
			b := set.For(t)
			switch why, out := d.Unreached[t.Key]; {
			case out:
				p.Unreached = append(p.Unreached, Unreached{Tray: t.Key, Node: t.Node, Why: why})
				p.Summary.Unreached++
				continue
			case b == nil:
				noBaseline[cmp.Or(t.Model, "(no model)")]++
				p.Summary.NoBaseline++
				continue
			}
			w := &work{t: t, b: b, updates: updates(b, d, t)}
			if len(w.updates) == 0 {
				p.Summary.UpToDate++
				continue
			}
			p.Summary.Differ++
			if t.Kind == inventory.KindCompute {
				w.held = held[t.Key]
			}
			if len(w.held) > 0 {
				p.Summary.HeldBack++
			} else {
				p.Summary.Updates += len(w.updates)
			}
			for _, u := range w.updates {
				diffs[Difference{Baseline: b.Key, Component: u.Component, From: u.From, To: u.To}]++
			}
			byRack[r] = append(byRack[r], w)
		}
	}
	p.differences(set, diffs)
	for _, m := range sortedKeys(noBaseline) {
		p.WithoutBaseline = append(p.WithoutBaseline, ModelCount{Model: m, Trays: noBaseline[m]})
	}
	return byRack
}

// differences lists the counted differences by baseline, component (in
// the baseline's order) and version.
func (p *Plan) differences(set *Set, diffs map[Difference]int) {
	for d, n := range diffs {
		d.Trays = n
		p.Differences = append(p.Differences, d)
	}
	rank := func(d Difference) int {
		return slices.IndexFunc(set.Baselines[d.Baseline].Components, func(c *Component) bool { return c.Name == d.Component })
	}
	slices.SortFunc(p.Differences, func(a, b Difference) int {
		return cmp.Or(strings.Compare(a.Baseline, b.Baseline), cmp.Compare(rank(a), rank(b)), strings.Compare(a.From, b.From))
	})
}

// updates are the tray's components that run another version than its
// baseline's, in the baseline's order.
func updates(b *Baseline, d *Discovery, t *Tray) []Update {
	var out []Update
	for _, c := range b.Components {
		have, known := d.version(t, c.Name)
		if known && have == c.Version {
			continue
		}
		out = append(out, Update{Component: c.Name, From: have, To: c.Version, SHA256: c.SHA256, URI: c.URI, Targets: c.Targets,
			ApplyTime: c.ApplyTime, Reset: c.Reset})
	}
	return out
}

// outage is what the tray's updates take out while they run: the tray
// for a host or chassis reset, its BMC for the BMC's own reset (the
// tray runs unmanaged), nothing for an update applied live.
func (w *work) outage() inventory.ID {
	if !w.runs() {
		return inventory.None
	}
	bmc := false
	for _, u := range w.updates {
		switch u.Reset {
		case ResetSystem, ResetChassis:
			return w.t.ID
		case ResetManager:
			bmc = true
		}
	}
	if bmc {
		return w.t.BMC
	}
	return inventory.None
}

// plan is the tray's part in a stage.
func (w *work) plan() *TrayPlan {
	tp := &TrayPlan{Key: w.t.Key, Kind: w.t.Kind.String(), Node: w.t.Node, Baseline: w.b.Key, Updates: w.updates, Resets: []string{}}
	for _, u := range w.updates {
		if u.Reset != ResetNone && !slices.Contains(tp.Resets, u.Reset) {
			tp.Resets = append(tp.Resets, u.Reset)
		}
		tp.Checks = append(tp.Checks, Check{Check: CheckVersion, Component: u.Component, Want: u.To})
	}
	if w.t.Kind == inventory.KindCompute {
		tp.Checks = append(tp.Checks, Check{Check: CheckBurnin})
	}
	return tp
}
