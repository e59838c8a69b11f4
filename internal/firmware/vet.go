package firmware

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
)

// Vet checks the baselines against the inventory: each names a tray
// model or tray group (FW006), no scale-up domain is left with mixed
// versions of a component (FW001), the policy can be met (FW008) and
// limits something (FW009).
func Vet(set *Set, s *Site) diag.List {
	var out diag.List
	out = append(out, models(set, s)...)
	out = append(out, mixedDomains(set, s)...)
	out = append(out, policy(set, s)...)
	return out.Sorted()
}

func models(set *Set, s *Site) diag.List {
	var out diag.List
	known := map[string]bool{}
	for _, t := range s.Trays {
		known[t.Model], known[t.Group] = true, true
	}
	var names []string
	for n := range known {
		if n != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, key := range sortedKeys(set.Baselines) {
		if known[key] {
			continue
		}
		hint := "the models and tray groups are " + strings.Join(names, ", ")
		if g := cueload.Closest(key, names); len(g) > 0 {
			hint = fmt.Sprintf("did you mean %q? ", g[0]) + hint
		}
		out.Errorf(RuleModel, set.Baselines[key].Pos, path(key), "%s: no compute tray, scale-up switch tray or power shelf of the inventory is model %q or of tray group %q", path(key), key, key).Hint = hint
	}
	return out
}

// clash is two baselines that give one component different versions,
// and the scale-up domains that hold trays of both.
type clash struct {
	a, b       *Component
	aKey, bKey string
	domains    []string
}

// mixedDomains finds scale-up domains whose trays follow baselines that
// give a domain-uniform component different versions: after the
// rollout the domain would run both. Each pair of baselines is reported
// once, with the domains it mixes.
func mixedDomains(set *Set, s *Site) diag.List {
	inDomain := map[inventory.ID][]*Baseline{}
	for _, t := range s.Trays {
		b := set.For(t)
		if b == nil || t.Domain == inventory.None || slices.Contains(inDomain[t.Domain], b) {
			continue
		}
		inDomain[t.Domain] = append(inDomain[t.Domain], b)
	}
	clashes := map[string]*clash{}
	var order []string
	for _, d := range sortedIDs(s.G, inDomain) {
		bs := inDomain[d]
		slices.SortFunc(bs, func(x, y *Baseline) int { return strings.Compare(x.Key, y.Key) })
		for i, x := range bs {
			for _, y := range bs[i+1:] {
				for _, c := range x.Components {
					o := y.Component(c.Name)
					if o == nil || o.Version == c.Version || !c.DomainUniform || !o.DomainUniform {
						continue
					}
					id := x.Key + "\x00" + y.Key + "\x00" + c.Name
					if clashes[id] == nil {
						clashes[id] = &clash{a: c, b: o, aKey: x.Key, bKey: y.Key}
						order = append(order, id)
					}
					clashes[id].domains = append(clashes[id].domains, s.G.El(d).Key)
				}
			}
		}
	}
	var out diag.List
	for _, id := range order {
		c := clashes[id]
		p := path(c.bKey, "components", c.b.Name, "version")
		d := out.Errorf(RuleMixedDomain, c.b.VersionPos, p, "%s: %s %s of %s and %s of %s would run side by side in scale-up domain %s",
			p, c.b.Name, c.b.Version, c.bKey, c.a.Version, c.aKey, some(c.domains))
		d.Related = []diag.Related{{Pos: c.a.VersionPos, Message: fmt.Sprintf("%s of %s", c.a.Name, c.aKey)}}
		d.Hint = fmt.Sprintf("give %s one version in both baselines, or set domain_uniform: false where the two are different parts (each tray's own BMC)", c.b.Name)
	}
	return out
}

// some names the first of keys and how many more.
func some(keys []string) string {
	if len(keys) == 1 {
		return keys[0]
	}
	return fmt.Sprintf("%s (and %d more)", keys[0], len(keys)-1)
}

func sortedIDs[V any](g *inventory.Graph, m map[inventory.ID]V) []inventory.ID {
	out := make([]inventory.ID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b inventory.ID) int { return strings.Compare(g.El(a).Key, g.El(b).Key) })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// policy checks that every unit a stage takes whole (a rack, or a
// scale-up domain's racks) fits in a stage, and that the policy limits
// something.
func policy(set *Set, s *Site) diag.List {
	var out diag.List
	p := set.Policy
	pos := p.Pos
	if !pos.IsValid() {
		pos = diag.Pos{File: "."}
	}
	if p.MaxRacksPerModule == 0 && p.MaxNodesPerStage == 0 {
		out.Warnf(RuleUnlimited, pos, "policy", "policy: neither max_racks_per_module nor max_nodes_per_stage is set: after the canary, one stage would update every rack at once").Hint =
			"state how much a stage may take down: policy: {max_racks_per_module: 1}"
	}
	if len(p.SignedBy) == 0 {
		out.Warnf(RuleUnsigned, pos, "policy", "policy: signed_by names no party: anyone who can edit this directory changes what sat firmware apply installs, and apply takes it unsigned").Hint =
			"name the vendor who vouches for the baseline: policy: {signed_by: [\"GPUWorks\"]}, then sat firmware sign --party GPUWorks"
	}
	var worst *unit
	for _, u := range units(s, p.WholeScaleUpDomains, nil) {
		if tooBig(p, u) && (worst == nil || u.nodes > worst.nodes) {
			worst = u
		}
	}
	switch {
	case worst != nil && len(worst.racks) == 1:
		out.Errorf(RulePolicy, pos, "policy", "policy: %s holds %d nodes, more than a stage may take (%s): a stage updates a rack whole",
			worst.name, worst.nodes, limits(p)).Hint = fmt.Sprintf("raise max_nodes_per_stage to %d or more", worst.nodes)
	case worst != nil:
		out.Errorf(RulePolicy, pos, "policy", "policy: %s holds %d racks and %d nodes, more than a stage may take (%s): with whole_scale_up_domains a stage updates it whole",
			worst.name, len(worst.racks), worst.nodes, limits(p)).Hint =
			"raise the limit, or set whole_scale_up_domains: false so that stages may take the domain's racks one by one"
	}
	return out
}

func tooBig(p Policy, u *unit) bool {
	return (p.MaxRacksPerModule > 0 && len(u.racks) > p.MaxRacksPerModule) || (p.MaxNodesPerStage > 0 && u.nodes > p.MaxNodesPerStage)
}

func limits(p Policy) string {
	var out []string
	if p.MaxRacksPerModule > 0 {
		out = append(out, fmt.Sprintf("max_racks_per_module %d", p.MaxRacksPerModule))
	}
	if p.MaxNodesPerStage > 0 {
		out = append(out, fmt.Sprintf("max_nodes_per_stage %d", p.MaxNodesPerStage))
	}
	return strings.Join(out, ", ")
}
