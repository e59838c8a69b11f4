package burnin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// module, the analysis of their numbers, and bisection of a low group.

// collective runs the all-reduce on nodes and returns its busbw at the
// fixed size.
func (r *runner) collective(ctx context.Context, step, file string, nodes []string) (float64, error) {
	out := r.run(ctx, Job{Step: step, Nodes: nodes, Command: r.cfg.Vendor.Collective(r.cfg.Size, r.cfg.GPUs)})
	r.res.keep(file, out.Stdout)
	if out.Err != nil || out.Exit != 0 {
		return 0, fmt.Errorf("%s: exit %d: %v", file, out.Exit, out.Err)
	}
	run, err := r.cfg.Vendor.ParseCollective(file, out.Stdout)
	if err != nil {
		return 0, err
	}
	if want := len(nodes) * r.cfg.GPUs; len(run.Ranks) > 0 && len(run.Ranks) != want {
		return 0, fmt.Errorf("%s: %d rank lines, want %d (%d nodes × %d GPUs)", file, len(run.Ranks), want, len(nodes), r.cfg.GPUs)
	}
	if hosts := run.Hosts(); len(hosts) > 0 && !slices.Equal(sorted(hosts), sorted(nodes)) {
		return 0, fmt.Errorf("%s: ran on %s, not on %s", file, strings.Join(hosts, ","), strings.Join(nodes, ","))
	}
	return run.BusBW(r.cfg.Size)
}

func sorted(xs []string) []string {
	out := slices.Clone(xs)
	sort.Strings(out)
	return out
}

// answered are the nodes whose single-node all-reduce read, in order:
// a node that did not answer is not put into a collective.
func (r *runner) answered(names []string) []string {
	var out []string
	for _, n := range names {
		if r.res.byName[n].answered {
			out = append(out, n)
		}
	}
	return out
}

type groupSpec struct {
	name    string
	members []string
}

// racks lists each rack's nodes in order, racks in first-seen order.
func (r *runner) racks() ([]string, map[string][]string) {
	var order []string
	by := map[string][]string{}
	for _, n := range r.res.Nodes {
		if _, ok := by[n.Rack]; !ok {
			order = append(order, n.Rack)
		}
		by[n.Rack] = append(by[n.Rack], n.Name)
	}
	return order, by
}

// pairs are each rack's ring neighbours: (n1,n2), (n2,n3), …, (nk,n1).
func (r *runner) pairs() []groupSpec {
	order, by := r.racks()
	var out []groupSpec
	for _, rack := range order {
		ns := r.answered(by[rack])
		for i := range ns {
			if len(ns) < 2 || (len(ns) == 2 && i == 1) {
				break
			}
			a, b := ns[i], ns[(i+1)%len(ns)]
			out = append(out, groupSpec{name: a + "+" + b, members: []string{a, b}})
		}
	}
	return out
}

func (r *runner) byRack() []groupSpec {
	order, by := r.racks()
	var out []groupSpec
	for _, rack := range order {
		if ns := r.answered(by[rack]); len(ns) > 1 {
			out = append(out, groupSpec{name: rack, members: ns})
		}
	}
	return out
}

func (r *runner) byModule() []groupSpec {
	var order []string
	by := map[string][]string{}
	for _, n := range r.res.Nodes {
		if _, ok := by[n.Module]; !ok {
			order = append(order, n.Module)
		}
		by[n.Module] = append(by[n.Module], n.Name)
	}
	var out []groupSpec
	for _, m := range order {
		if ns := r.answered(by[m]); len(ns) > 1 && r.spansRacks(ns) {
			out = append(out, groupSpec{name: m, members: ns})
		}
	}
	return out
}

func (r *runner) spansRacks(ns []string) bool {
	for _, n := range ns {
		if r.res.byName[n].Rack != r.res.byName[ns[0]].Rack {
			return true
		}
	}
	return false
}

// specs are the ladder's groups of scope (from ladder), or, from a
// Recording, the groups it recorded: a rack's named by its rack, a
// module's by its module, a pair by its two nodes.
func (r *runner) specs(scope string, ladder func() []groupSpec) []groupSpec {
	rec, ok := r.exec.(Recording)
	if !ok {
		return ladder()
	}
	var out []groupSpec
	for _, ns := range rec.Groups(scope) {
		name := strings.Join(ns, "+")
		switch scope {
		case ScopeRack:
			name = r.res.byName[ns[0]].Rack
		case ScopeModule:
			name = r.res.byName[ns[0]].Module
		}
		out = append(out, groupSpec{name: name, members: ns})
	}
	return out
}

// collectives runs each group's all-reduce.
func (r *runner) collectives(ctx context.Context, scope string, specs []groupSpec) {
	r.addTotal(len(specs))
	groups := make([]*Group, len(specs))
	forEach(len(specs), func(i int) {
		s := specs[i]
		groups[i] = r.group(ctx, scope, "", s)
	})
	r.res.mu.Lock()
	r.res.Groups = append(r.res.Groups, groups...)
	r.res.mu.Unlock()
}

func (r *runner) group(ctx context.Context, scope, parent string, s groupSpec) *Group {
	g := &Group{Name: s.name, Scope: scope, Parent: parent, Members: s.members, Ranks: len(s.members) * r.cfg.GPUs,
		File: "groups/" + scope + "-" + fileSafe(s.name) + ".txt"}
	bw, err := r.collective(ctx, scope, g.File, s.members)
	status := fmt.Sprintf("busbw %.1f GB/s", bw)
	if err != nil {
		g.Problem, status = err.Error(), "failed"
	}
	g.BusBW = bw
	r.progress(scope, s.members, status)
	return g
}

// analyze judges the nodes' measures and the groups, bisects every low
// group and sets each node's verdict.
func (r *runner) analyze(ctx context.Context) {
	var obs []Observation
	for _, n := range r.res.Nodes {
		for m, v := range n.Measures {
			obs = append(obs, Observation{Node: n.Name, Scope: ScopeSingle, Ranks: r.cfg.GPUs, SKU: n.SKU, Measure: m, Value: v})
		}
	}
	for _, g := range r.res.Groups {
		if g.Problem != "" {
			continue
		}
		sku := r.skuOf(g.Members)
		switch g.Scope {
		case ScopePair:
			if !r.evidence(g) {
				continue // a member gave no reading of its own: it implicates nobody
			}
			for _, m := range g.Members {
				obs = append(obs, Observation{Node: m, Scope: ScopePair, Ranks: g.Ranks, SKU: sku, Measure: MeasureBusBW, Value: g.BusBW})
			}
		case ScopeRack:
			obs = append(obs, Observation{Node: g.Name, Scope: ScopeRack, Ranks: g.Ranks, SKU: sku, Measure: MeasureBusBW, Value: g.BusBW})
		case ScopeModule:
			obs = append(obs, Observation{Node: g.Name, Scope: ScopeModule, Ranks: g.Ranks, SKU: sku, Measure: MeasureModuleBusBW, Value: g.BusBW})
		}
	}
	an := Analyze(obs, r.cfg.Floors)
	r.res.Analysis = an
	groupFlag := map[string]Flag{}
	for _, f := range an.Flags {
		if n := r.res.byName[f.Node]; n != nil {
			n.Flags = append(n.Flags, f)
			continue
		}
		groupFlag[f.Node] = f
	}
	var low []*Group
	for _, g := range r.res.Groups {
		if f, ok := groupFlag[g.Name]; ok && (g.Scope == ScopeRack || g.Scope == ScopeModule) {
			g.Low, g.Threshold = true, f.Threshold
			low = append(low, g)
		}
		if g.Problem != "" && g.Scope != ScopePair {
			g.Low = true
			low = append(low, g)
		}
	}
	for _, g := range low {
		r.bisect(ctx, g, g, an)
	}
	r.repair(ctx, an)
	for _, n := range r.res.Nodes {
		n.Passed = len(n.Problems) == 0 && len(n.Flags) == 0 && len(n.Retest) == 0
	}
}

// skuOf is the GPU model of a group's first member whose telemetry
// read: a member without one does not move the group out of its
// cohort.
func (r *runner) skuOf(members []string) string {
	for _, m := range members {
		if sku := r.res.byName[m].SKU; sku != "" {
			return sku
		}
	}
	return ""
}

// evidence reports whether a pair's run is evidence about its members:
// each of them gave readings of its own (a node that did not answer,
// or whose output did not read, shifts no blame onto its partner).
func (r *runner) evidence(g *Group) bool {
	for _, m := range g.Members {
		if n := r.res.byName[m]; !n.answered || n.unread {
			return false
		}
	}
	return true
}

// threshold is what a group of members is held to in a bisection: a
// single node, its single-node cohort's; a group within one rack, the
// rack cohort's (bus bandwidth at a large size barely depends on the
// rank count inside one NVLink domain); across racks, the module
// cohort's or floor.
func (r *runner) threshold(an Analysis, members []string, parent *Group) (float64, string) {
	sku := r.skuOf(members)
	if sku == "" && parent != nil { // no telemetry read: the model of the group it was split from
		sku = r.skuOf(parent.Members)
	}
	scope, measure, ranks := ScopeModule, MeasureModuleBusBW, 0
	switch {
	case len(members) == 1:
		scope, measure, ranks = ScopeSingle, MeasureBusBW, r.cfg.GPUs
	case !r.spansRacks(members):
		scope, measure = ScopeRack, MeasureBusBW
	}
	t := math.Inf(-1)
	for _, c := range an.Cohorts {
		if c.Scope == scope && c.Measure == measure && c.SKU == sku && (ranks == 0 || c.Ranks == ranks) && c.N >= 3 {
			t = math.Max(t, c.Threshold)
		}
	}
	if lim, ok := r.cfg.Floors[sku][measure]; ok && (lim.Scopes == nil || slices.Contains(lim.Scopes, scope)) {
		t = math.Max(t, lim.Value)
	}
	if math.IsInf(t, -1) && parent != nil && parent.Threshold > 0 && scope == parent.Scope {
		t = parent.Threshold
	}
	return t, scope
}

// bisect splits a low group in halves, runs each, and follows the low
// ones down to single nodes, each of which is flagged; a group whose
// halves are both fine is reported on all its members (the fault is
// between them, or it does not repeat). With a Recording, a half it
// holds no output for, and a group whose recorded halves are both
// fine, implicate their members for a re-test instead.
func (r *runner) bisect(ctx context.Context, root, g *Group, an Analysis) {
	if len(g.Members) == 1 {
		return
	}
	half := len(g.Members) / 2
	// split a module at a rack boundary first: halves of racks
	specs := []groupSpec{{name: g.Name + "[a]", members: g.Members[:half]}, {name: g.Name + "[b]", members: g.Members[half:]}}
	r.addTotal(2)
	subs := make([]*Group, 2)
	forEach(2, func(i int) {
		if !r.canRun(Job{Step: "bisect", Nodes: specs[i].members}) {
			r.progress("bisect", specs[i].members, "not recorded: its members need a re-test")
			return
		}
		subs[i] = r.group(ctx, "bisect", g.Name, specs[i])
	})
	anyLow, untried := false, false
	for i, s := range subs {
		if s == nil {
			untried = true
			r.implicate(root, g, specs[i].members, fmt.Sprintf("no recorded all-reduce of its part %s (%s) narrows it to a node", specs[i].name, hostSummary(specs[i].members)))
			continue
		}
		t, scope := r.threshold(an, s.Members, g)
		s.Threshold = t
		s.Low = s.Problem != "" || s.BusBW < t
		r.res.mu.Lock()
		r.res.Groups = append(r.res.Groups, s)
		r.res.mu.Unlock()
		if !s.Low {
			continue
		}
		anyLow = true
		if len(s.Members) == 1 {
			n := r.res.byName[s.Members[0]]
			med := math.NaN()
			for _, c := range an.Cohorts {
				if c.Scope == ScopeSingle && c.Measure == MeasureBusBW && c.SKU == n.SKU {
					med = c.Median
				}
			}
			f := Flag{Node: n.Name, Measure: MeasureBusBW, Scope: root.Scope, Ranks: s.Ranks, Value: s.BusBW, Median: med, Threshold: t,
				Why: fmt.Sprintf("bisected from %s %s (busbw %.1f GB/s, threshold %.1f): its half stayed low down to this node (held to the %s threshold)", root.Scope, root.Name, root.BusBW, root.Threshold, scope)}
			if s.Problem != "" {
				f.Why = "bisected: its own run failed: " + s.Problem
			}
			r.res.mu.Lock()
			n.Flags = append(n.Flags, f)
			r.res.mu.Unlock()
			continue
		}
		r.bisect(ctx, root, s, an)
	}
	switch {
	case anyLow || untried:
	case r.recording():
		r.implicate(root, g, g.Members, "neither recorded half of it was low: the fault lies between its halves or did not repeat")
	default:
		for _, m := range g.Members {
			n := r.res.byName[m]
			r.problem(n, "node %s: %s %s was low (busbw %.1f GB/s, threshold %.1f) but neither half of it was: the fault lies between its halves or did not repeat",
				m, g.Scope, g.Name, g.BusBW, g.Threshold)
		}
	}
}

// recording reports whether the jobs are answered from recorded
// outputs.
func (r *runner) recording() bool {
	_, ok := r.exec.(Recording)
	return ok
}

// canRun reports whether j can be run: always, unless its output comes
// from a Recording that has none.
func (r *runner) canRun(j Job) bool {
	rec, ok := r.exec.(Recording)
	return !ok || rec.Has(j)
}

// implicate marks members of a low group that recorded outputs cannot
// narrow down as needing a re-test, naming the group, the part of it
// that stayed low, why it goes no further, and each member's pairs.
func (r *runner) implicate(root, g *Group, members []string, why string) {
	at := lowWhy(root)
	if g != root {
		at += ", and so was its part " + lowWhy(g)
	}
	r.res.mu.Lock()
	defer r.res.mu.Unlock()
	for _, m := range members {
		reason := fmt.Sprintf("node %s: implicated, re-test needed: %s; %s", m, at, why)
		if ps := r.pairsOf(m); ps != "" {
			reason += "; its pairs: " + ps
		}
		n := r.res.byName[m]
		n.Retest = append(n.Retest, reason)
	}
}

// lowWhy says how a group came out low.
func lowWhy(g *Group) string {
	if g.Problem != "" {
		return fmt.Sprintf("%s %s failed (%s)", g.Scope, g.Name, g.Problem)
	}
	return fmt.Sprintf("%s %s was low (busbw %.1f GB/s, threshold %.1f)", g.Scope, g.Name, g.BusBW, g.Threshold)
}

// pairsOf lists the pairs node was in with their busbw (called with
// res.mu held).
func (r *runner) pairsOf(node string) string {
	var out []string
	for _, g := range r.res.Groups {
		if g.Scope != ScopePair || !slices.Contains(g.Members, node) {
			continue
		}
		if g.Problem != "" {
			out = append(out, g.Name+" failed")
			continue
		}
		out = append(out, fmt.Sprintf("%s %.1f GB/s", g.Name, g.BusBW))
	}
	return strings.Join(out, ", ")
}
