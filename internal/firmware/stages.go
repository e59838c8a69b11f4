package firmware

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/inventory"
)

// unit is what a stage takes whole: a rack, or with
// whole_scale_up_domains the racks of a scale-up domain.
type unit struct {
	name   string
	racks  []*Rack // sorted by key
	module string
	nodes  int // the nodes of its racks
	// set by prepare: its trays' work, what their updates take out, and
	// the nodes out of the pool while it is updated (key → action)
	work   []*work
	failed []inventory.ID
	out    map[string]string
}

// units groups the racks keep accepts (nil: all) into units, in the
// order of their first rack's key.
func units(s *Site, whole bool, keep func(*Rack) bool) []*unit {
	var racks []*Rack
	for _, r := range s.Racks {
		if keep == nil || keep(r) {
			racks = append(racks, r)
		}
	}
	if !whole {
		out := make([]*unit, len(racks))
		for i, r := range racks {
			out[i] = &unit{name: "rack " + r.Key, racks: []*Rack{r}, module: r.Module, nodes: r.Nodes}
		}
		return out
	}
	return domainUnits(s, racks)
}

// domainUnits joins racks that share a scale-up domain, through any
// number of them (a rack with trays in two domains joins both).
func domainUnits(s *Site, racks []*Rack) []*unit {
	of := map[*Rack]*unit{}
	in := map[*Rack]bool{}
	for _, r := range racks {
		in[r] = true
	}
	var out []*unit
	for _, r := range racks {
		if of[r] != nil {
			continue
		}
		u := &unit{module: r.Module}
		out = append(out, u)
		u.add(r, of)
		for i := 0; i < len(u.racks); i++ {
			for _, d := range u.racks[i].domains() {
				for _, o := range s.domainRacks[d] {
					if of[o] == nil && in[o] {
						u.add(o, of)
					}
				}
			}
		}
	}
	for _, u := range out {
		slices.SortFunc(u.racks, func(a, b *Rack) int { return strings.Compare(a.Key, b.Key) })
		u.name = "rack " + u.racks[0].Key
		if len(u.racks) > 1 {
			u.name = fmt.Sprintf("scale-up domain %s (racks %s)", s.G.El(u.racks[0].domains()[0]).Key, strings.Join(rackKeys(u.racks), ", "))
		}
	}
	return out
}

func (u *unit) add(r *Rack, of map[*Rack]*unit) {
	of[r] = u
	u.racks = append(u.racks, r)
	u.nodes += r.Nodes
}

func rackKeys(rs []*Rack) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Key
	}
	return out
}

// prepare finds what the unit's updates take out and the nodes out of
// the pool while they run: the nodes updated, the nodes its outages
// stop (through the inventory's blast radius), and its racks' nodes
// that other owners hold already.
func (u *unit) prepare(s *Site, byRack map[*Rack][]*work, held map[string][]hold.Owner) {
	u.out = map[string]string{}
	for _, r := range u.racks {
		for _, w := range byRack[r] {
			u.work = append(u.work, w)
			if id := w.outage(); id != inventory.None {
				u.failed = append(u.failed, id)
			}
			if w.runs() && w.t.Kind == inventory.KindCompute {
				u.out[w.t.Key] = NodeUpdate
			}
		}
		for _, t := range r.Trays {
			if t.Kind == inventory.KindCompute && len(held[t.Key]) > 0 {
				u.out[t.Key] = NodeHeld
			}
		}
	}
	if len(u.failed) == 0 {
		return
	}
	for _, n := range inventory.Blast(s.G, u.failed...).Nodes {
		if _, ok := u.out[n.Key]; ok {
			continue
		}
		u.out[n.Key] = NodeStopped
		if len(held[n.Key]) > 0 {
			u.out[n.Key] = NodeHeld
		}
	}
}

// stager places units in stages: a canary stage first (policy canary:
// up to its racks, at least one unit), then each unit in the first
// stage it fits, by module, nodes and control planes.
type stager struct {
	p      Policy
	cps    map[string][]string
	canary *stageBuild
	rest   []*stageBuild
}

// stageBuild is a stage being filled.
type stageBuild struct {
	units   []*unit
	racks   int
	byMod   map[string]int // racks by module
	nodes   map[string]string
	cps     map[string]bool // control-plane modules touched
	exceeds string
	canary  bool
}

func newStage() *stageBuild {
	return &stageBuild{byMod: map[string]int{}, nodes: map[string]string{}, cps: map[string]bool{}}
}

func (st *stager) place(u *unit) {
	if st.p.CanaryRacks > 0 {
		if st.canary == nil {
			st.canary = newStage()
			st.canary.canary = true
		}
		if len(st.canary.units) == 0 || (st.canary.racks+len(u.racks) <= st.p.CanaryRacks && st.fits(st.canary, u) == "") {
			st.canary.add(u, st, st.fits(st.canary, u))
			return
		}
	}
	for _, sb := range st.rest {
		if st.fits(sb, u) == "" {
			sb.add(u, st, "")
			return
		}
	}
	sb := newStage()
	st.rest = append(st.rest, sb)
	sb.add(u, st, st.fits(sb, u))
}

// fits says which limit u would pass in sb ("" none).
func (st *stager) fits(sb *stageBuild, u *unit) string {
	p := st.p
	if p.MaxRacksPerModule > 0 && sb.byMod[u.module]+len(u.racks) > p.MaxRacksPerModule {
		return fmt.Sprintf("max_racks_per_module %d: %s holds %d rack(s)", p.MaxRacksPerModule, u.name, len(u.racks))
	}
	if p.MaxNodesPerStage > 0 {
		n := len(sb.nodes)
		for k := range u.out {
			if _, ok := sb.nodes[k]; !ok {
				n++
			}
		}
		if n > p.MaxNodesPerStage {
			return fmt.Sprintf("max_nodes_per_stage %d: %d nodes out, those held already counted", p.MaxNodesPerStage, n)
		}
	}
	if p.ControlPlanesApart && len(st.cps[u.module]) > 0 && len(sb.cps) > 0 && !sb.cps[u.module] {
		return fmt.Sprintf("control_planes_apart: %s holds a replica of %s, as does %s", u.module, strings.Join(st.cps[u.module], ", "),
			strings.Join(slices.Sorted(maps.Keys(sb.cps)), ", "))
	}
	return ""
}

func (sb *stageBuild) add(u *unit, st *stager, exceeds string) {
	sb.units = append(sb.units, u)
	sb.racks += len(u.racks)
	sb.byMod[u.module] += len(u.racks)
	for k, a := range u.out {
		if sb.nodes[k] == "" || a == NodeUpdate || a == NodeHeld {
			sb.nodes[k] = a
		}
	}
	if len(st.cps[u.module]) > 0 {
		sb.cps[u.module] = true
	}
	if exceeds != "" && sb.exceeds == "" {
		sb.exceeds = exceeds
	}
}

// stages are the canary's (if any) and the others, in order.
func (st *stager) stages() []*stageBuild {
	if st.canary != nil && len(st.canary.units) > 0 {
		return append([]*stageBuild{st.canary}, st.rest...)
	}
	return st.rest
}

// stage writes a stage out: its racks, nodes, holds, skipped nodes,
// trays' updates and, for --what-if, its blast radius.
func (sb *stageBuild) stage(s *Site, n int, rollout string, held map[string][]hold.Owner, whatIf bool) *Stage {
	stg := &Stage{Number: n, Canary: sb.canary, Exceeds: sb.exceeds, Nodes: []StageNode{}, Holds: []PlannedHold{}, Skipped: []Skipped{}, Trays: []*TrayPlan{}}
	var failed []inventory.ID
	var components []string
	for _, u := range sb.units {
		for _, r := range u.racks {
			stg.Racks = append(stg.Racks, r.Key)
			stg.Modules = appendNew(stg.Modules, r.Module)
			stg.FailureDomains = appendNew(stg.FailureDomains, r.FailureDomain)
		}
		for _, w := range u.work {
			if !w.runs() {
				continue
			}
			stg.Trays = append(stg.Trays, w.plan())
			for _, up := range w.updates {
				components = appendNew(components, up.Component)
			}
		}
		failed = append(failed, u.failed...)
	}
	for _, l := range [][]string{stg.Racks, stg.Modules, stg.FailureDomains, components} {
		slices.Sort(l)
	}
	slices.SortFunc(stg.Trays, func(a, b *TrayPlan) int { return strings.Compare(a.Key, b.Key) })
	owner := hold.Of(hold.Firmware, fmt.Sprintf("%s-s%02d", rollout, n))
	h := PlannedHold{Owner: owner, Nodes: []string{}, Why: fmt.Sprintf("firmware rollout %s, stage %d: %s", rollout, n, strings.Join(components, ", "))}
	for _, key := range slices.Sorted(maps.Keys(sb.nodes)) {
		name := ""
		if t := s.Tray(key); t != nil {
			name = t.Node
		}
		a := sb.nodes[key]
		stg.Nodes = append(stg.Nodes, StageNode{Key: key, Name: name, Action: a})
		if a == NodeHeld {
			stg.Skipped = append(stg.Skipped, Skipped{Key: key, Name: name, Owners: held[key]})
			continue
		}
		h.Nodes = append(h.Nodes, key)
	}
	if len(h.Nodes) > 0 {
		stg.Holds = append(stg.Holds, h)
	}
	if whatIf {
		imp := inventory.Blast(s.G, failed...)
		stg.BlastRadius = &imp
	}
	return stg
}

func appendNew(l []string, s string) []string {
	if s == "" || slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}
