package topology

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// DriftFormat is the JSON drift report's format.
const DriftFormat = "seam.topology-drift/v1"

// Drift classes: what differs between the inventory and a scheduler.
const (
	DriftNodeMissing     = "node-missing"         // in the inventory, not in the scheduler
	DriftNodeUnknown     = "node-unknown"         // in the scheduler, not in the inventory
	DriftNodeUndefined   = "node-undefined"       // on a Slurm leaf, but not a node slurm.conf defines
	DriftNodeNoLeaf      = "node-on-no-leaf"      // a Slurm node on no leaf switch
	DriftTwoLeaves       = "node-on-two-leaves"   // a node on two leaves
	DriftWrongRack       = "wrong-rack"           // under another leaf of its module
	DriftWrongModule     = "wrong-module"         // under a leaf of another module
	DriftSwitchMoved     = "switch-moved"         // a switch under another parent (a rack moved)
	DriftSwitchMissing   = "switch-missing"       // a switch the inventory has, Slurm not
	DriftSwitchUnknown   = "switch-unknown"       // a switch Slurm has, the inventory not
	DriftBlockSmall      = "block-small"          // a block smaller than the base block size
	DriftBlockSizes      = "block-sizes"          // BlockSizes other than the inventory's
	DriftAggregateSpans  = "aggregate-spans"      // an aggregated block across modules
	DriftMixedGeneration = "mixed-generation"     // nodes of two generations in one block or leaf
	DriftFeature         = "generation-feature"   // a node's generation feature missing or other
	DriftLabelWrong      = "label-wrong"          // a managed label with another value
	DriftLabelMissing    = "label-missing"        // a managed label not set
	DriftLabelUnmanaged  = "label-unmanaged"      // a label under seam's prefix that seam does not set
	DriftCliqueSplit     = "clique-split"         // one scale-up domain in several NVLink cliques
	DriftCliqueSpans     = "clique-spans-domains" // one clique across declared domains
)

// CliqueLabel is the NVLink clique label NVIDIA's GPU feature discovery
// sets (ClusterUUID.CliqueID).
const CliqueLabel = "nvidia.com/gpu.clique"

// ProductLabel is GPU feature discovery's GPU model label.
const ProductLabel = "nvidia.com/gpu.product"

// Finding is one difference.
type Finding struct {
	System  string `json:"system"` // slurm, kubernetes
	Class   string `json:"class"`
	Subject string `json:"subject"` // "nodes gpu-a-r05-n[01-18]", "switch a-r05", …
	Want    string `json:"want,omitempty"`
	Got     string `json:"got,omitempty"`
	Message string `json:"message"`
}

// Report is a drift check's result.
type Report struct {
	Format    string         `json:"format"`
	Inventory string         `json:"inventory"`
	Truth     string         `json:"truth"`
	Inputs    []string       `json:"inputs"`
	Checked   map[string]int `json:"checked"`
	Findings  []Finding      `json:"findings"`
}

// Drifted reports whether anything differs.
func (r *Report) Drifted() bool { return len(r.Findings) > 0 }

// DriftOptions say what the inventory expects of the schedulers.
type DriftOptions struct {
	Inventory   string // what the topology was built from, for the report
	LabelPrefix string
	ZoneLabel   bool
}

// Drift compares the topology with what Slurm and Kubernetes run
// (either may be nil) and names each difference. Slurm's trees are
// compared by parent → child edges: a parent lists every node below it
// expanded, so only leaves' nodes and parents' child switches count.
func Drift(t *Topology, slurm, kube *scheduler.State, o DriftOptions) *Report {
	if o.LabelPrefix == "" {
		o.LabelPrefix = DefaultLabelPrefix
	}
	r := &Report{Format: DriftFormat, Inventory: o.Inventory, Checked: map[string]int{"inventory_nodes": len(t.Nodes())}, Findings: []Finding{}}
	r.Truth = "the inventory: leaves (racks) and modules"
	if t.Leaf == LeafDomain {
		r.Truth = "the inventory: leaves (scale-up domains) and modules"
	}
	if t.Fabric != "" {
		r.Truth = "leaves from the fabric tree " + t.Fabric + "; modules from the inventory"
	}
	g := &grouper{}
	if slurm != nil {
		r.Inputs = append(r.Inputs, slurmInputs(slurm)...)
		driftSlurm(g, t, slurm, r)
	}
	if kube != nil {
		r.Inputs = append(r.Inputs, kube.Sources...)
		r.Checked["kubernetes_nodes"] = len(kube.Nodes)
		driftKube(g, t, kube, o)
	}
	r.Findings = g.findings()
	return r
}

func slurmInputs(st *scheduler.State) []string {
	out := slices.Clone(st.Sources)
	if st.Version != "" {
		out = append(out, "Slurm "+st.Version)
	}
	return out
}

// grouper folds findings of many nodes with the same class, want and
// got into one, naming the nodes as a hostlist.
type grouper struct {
	order []groupKey
	nodes map[groupKey][]string
	plain []Finding
}

type groupKey struct{ system, class, want, got, message string }

// node records a finding about one node; message has %s for the nodes.
func (g *grouper) node(system, class, node, want, got, message string) {
	if g.nodes == nil {
		g.nodes = map[groupKey][]string{}
	}
	k := groupKey{system, class, want, got, message}
	if _, ok := g.nodes[k]; !ok {
		g.order = append(g.order, k)
	}
	g.nodes[k] = append(g.nodes[k], node)
}

func (g *grouper) add(f Finding) { g.plain = append(g.plain, f) }

func (g *grouper) findings() []Finding {
	out := slices.Clone(g.plain)
	for _, k := range g.order {
		names := g.nodes[k]
		subject := "node " + names[0]
		if len(names) > 1 {
			subject = fmt.Sprintf("%d nodes %s", len(names), hostlist.Abbrev(names))
		}
		out = append(out, Finding{System: k.system, Class: k.class, Subject: subject, Want: k.want, Got: k.got, Message: fmt.Sprintf(k.message, subject)})
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.System, b.System), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Subject, b.Subject), cmp.Compare(a.Want, b.Want))
	})
	if out == nil {
		out = []Finding{}
	}
	return out
}

// expected indexes the topology for comparisons.
type expected struct {
	node     map[string]*Node  // by Slurm name
	leafMod  map[string]string // leaf → module
	parent   map[string]string // switch → parent switch
	switches []Switch
}

func index(t *Topology) *expected {
	e := &expected{node: map[string]*Node{}, leafMod: map[string]string{}, parent: map[string]string{}, switches: t.Tree()}
	for _, l := range t.Leaves() {
		e.leafMod[l.Name] = l.Module
		for _, n := range l.Nodes {
			e.node[n.Slurm] = n
		}
	}
	for _, s := range e.switches {
		for _, c := range s.Switches {
			e.parent[c] = s.Name
		}
	}
	return e
}

func driftSlurm(g *grouper, t *Topology, st *scheduler.State, r *Report) {
	e := index(t)
	known := map[string]*scheduler.Node{}
	if st.Nodes != nil {
		for i := range st.Nodes {
			known[st.Nodes[i].Name] = &st.Nodes[i]
		}
		r.Checked["slurm_nodes"] = len(st.Nodes)
	}
	// leaves: the tree's leaf switches, or the base blocks
	var leaves []Switch
	liveParent := map[string][]string{}
	switch st.Plugin {
	case "tree":
		live := LiveTree(st)
		r.Checked["slurm_switches"] = len(live)
		for _, s := range live {
			if len(s.Switches) == 0 {
				leaves = append(leaves, s)
			}
			for _, c := range s.Switches {
				liveParent[c] = append(liveParent[c], s.Name)
			}
		}
		driftSwitches(g, e, live, liveParent)
	case "block":
		for _, b := range st.Blocks {
			if !b.Aggregated {
				leaves = append(leaves, Switch{Name: b.Name, Nodes: b.Nodes, Line: b.Line})
			}
		}
		r.Checked["slurm_blocks"] = len(leaves)
		driftBlocks(g, t, e, st)
	}
	liveLeaf := map[string][]string{}
	for _, l := range leaves {
		for _, n := range l.Nodes {
			liveLeaf[n] = append(liveLeaf[n], l.Name)
		}
	}
	moduleOfLive := func(leaf string) string {
		if ps := liveParent[leaf]; len(ps) > 0 {
			return ps[0]
		}
		return e.leafMod[leaf]
	}
	for _, n := range t.Nodes() {
		ll := liveLeaf[n.Slurm]
		_, inSinfo := known[n.Slurm]
		switch {
		case len(ll) == 0 && st.Nodes != nil && inSinfo && st.Plugin != "":
			g.node("slurm", DriftNodeNoLeaf, n.Slurm, n.Leaf, "", "%s: Slurm nodes on no leaf switch; the inventory's leaf is "+n.Leaf)
		case len(ll) == 0 && (st.Plugin != "" || st.Nodes != nil):
			g.node("slurm", DriftNodeMissing, n.Slurm, n.Leaf, "", "%s: in the inventory (leaf "+n.Leaf+", module "+n.Module+"), not in Slurm")
		case len(ll) > 1:
			g.node("slurm", DriftTwoLeaves, n.Slurm, n.Leaf, strings.Join(ll, ","), "%s: on leaves "+strings.Join(ll, " and ")+" in Slurm; the inventory's leaf is "+n.Leaf)
		case ll[0] != n.Leaf:
			class := DriftWrongRack
			liveMod := moduleOfLive(ll[0])
			if liveMod != n.Module {
				class = DriftWrongModule
			}
			g.node("slurm", class, n.Slurm, n.Leaf+" ("+n.Module+")", ll[0]+" ("+orNone(liveMod)+")",
				"%s: under "+ll[0]+" (module "+orNone(liveMod)+") in Slurm; the inventory's leaf is "+n.Leaf+" (module "+n.Module+")")
		}
		if len(ll) > 0 && st.Nodes != nil && !inSinfo {
			g.node("slurm", DriftNodeUndefined, n.Slurm, "", "", "%s: Slurm's topology names it, but slurm.conf defines no such node")
		}
		if st.Nodes != nil && inSinfo && n.Generation != "" {
			want := Feature(n.Generation)
			got := genFeatures(known[n.Slurm].Features)
			if !slices.Contains(got, want) || len(got) > 1 {
				g.node("slurm", DriftFeature, n.Slurm, want, orNone(strings.Join(got, ",")), "%s: Slurm features say "+orNone(strings.Join(got, ","))+"; the inventory's generation is "+want+" (jobs with --constraint="+want+" skip these)")
			}
		}
	}
	for _, l := range leaves {
		for _, name := range l.Nodes {
			if e.node[name] == nil {
				g.node("slurm", DriftNodeUnknown, name, "", l.Name, "%s: under "+l.Name+" in Slurm; the inventory has no such node")
			}
		}
	}
	if st.Nodes != nil {
		for _, n := range st.Nodes {
			if e.node[n.Name] == nil && len(liveLeaf[n.Name]) == 0 {
				g.node("slurm", DriftNodeUnknown, n.Name, "", "", "%s: Slurm nodes on no leaf, which the inventory does not have")
			}
		}
	}
	what := "leaf"
	if st.Plugin == "block" {
		what = "block"
	}
	mixed(g, leaves, known, what)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func genFeatures(fs []string) []string {
	var out []string
	for _, f := range fs {
		if strings.HasPrefix(f, "gen_") {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// driftSwitches compares switch → switch edges.
func driftSwitches(g *grouper, e *expected, live []Switch, liveParent map[string][]string) {
	liveNames := map[string]bool{}
	for _, s := range live {
		liveNames[s.Name] = true
	}
	wantNames := map[string]bool{}
	for _, s := range e.switches {
		wantNames[s.Name] = true
		if !liveNames[s.Name] {
			g.add(Finding{System: "slurm", Class: DriftSwitchMissing, Subject: "switch " + s.Name, Want: e.parent[s.Name],
				Message: fmt.Sprintf("switch %s: in the inventory's tree (under %s), not in Slurm's", s.Name, orNone(e.parent[s.Name]))})
			continue
		}
		want, got := e.parent[s.Name], strings.Join(liveParent[s.Name], ",")
		if want != got {
			what := ""
			if e.leafMod[s.Name] != "" && want != "" {
				what = fmt.Sprintf(" (rack or domain %s moved to module %s?)", s.Name, want)
			}
			g.add(Finding{System: "slurm", Class: DriftSwitchMoved, Subject: "switch " + s.Name, Want: orNone(want), Got: orNone(got),
				Message: fmt.Sprintf("switch %s is under %s in Slurm; the inventory puts it under %s%s", s.Name, orNone(got), orNone(want), what)})
		}
	}
	for _, s := range live {
		if !wantNames[s.Name] {
			g.add(Finding{System: "slurm", Class: DriftSwitchUnknown, Subject: "switch " + s.Name, Got: strings.Join(liveParent[s.Name], ","),
				Message: fmt.Sprintf("switch %s (line %d) is in Slurm's tree, not in the inventory's", s.Name, s.Line)})
		}
	}
}

// driftBlocks checks the block plugin's sizes and aggregates.
func driftBlocks(g *grouper, t *Topology, e *expected, st *scheduler.State) {
	plan, err := PlanBlocks(t)
	if err != nil {
		g.add(Finding{System: "slurm", Class: DriftBlockSizes, Subject: "blocks", Message: "the inventory has no block layout: " + err.Error()})
		return
	}
	sizes := map[int]bool{}
	for _, b := range st.Blocks {
		if b.Size > 0 {
			sizes[b.Size] = true
		}
	}
	var got []int
	for s := range sizes {
		got = append(got, s)
	}
	slices.Sort(got)
	if len(got) > 0 && !slices.Equal(got, plan.Sizes) {
		g.add(Finding{System: "slurm", Class: DriftBlockSizes, Subject: "BlockSizes", Want: ints(plan.Sizes), Got: ints(got),
			Message: fmt.Sprintf("Slurm's block sizes are %s; the inventory's are %s", ints(got), ints(plan.Sizes))})
	}
	base := plan.Base
	if len(got) > 0 {
		base = got[0]
	}
	for _, b := range st.Blocks {
		if b.Aggregated {
			names, err := hostlist.Expand(b.Name)
			if err != nil {
				continue
			}
			mods := map[string]bool{}
			for _, n := range names {
				mods[orNone(e.leafMod[n])] = true
			}
			if len(mods) > 1 {
				g.add(Finding{System: "slurm", Class: DriftAggregateSpans, Subject: "aggregated block " + b.Name, Got: strings.Join(sortedSet(mods), ","),
					Message: fmt.Sprintf("aggregated block %s (%d nodes) spans modules %s: list blocks module by module, with a power-of-two count per module", b.Name, len(b.Nodes), strings.Join(sortedSet(mods), ", "))})
			}
			continue
		}
		if len(b.Nodes) < base {
			g.add(Finding{System: "slurm", Class: DriftBlockSmall, Subject: "block " + b.Name, Want: fmt.Sprint(base), Got: fmt.Sprint(len(b.Nodes)),
				Message: fmt.Sprintf("block %s has %s, fewer than the base block size %d", b.Name, plural(len(b.Nodes), "node"), base)})
		}
	}
}

func ints(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

// mixed flags leaves (or blocks) whose nodes carry two generations.
func mixed(g *grouper, leaves []Switch, known map[string]*scheduler.Node, what string) {
	if len(known) == 0 {
		return
	}
	for _, l := range leaves {
		gens := map[string][]string{}
		for _, n := range l.Nodes {
			if k := known[n]; k != nil {
				key := orNone(strings.Join(genFeatures(k.Features), ","))
				gens[key] = append(gens[key], n)
			}
		}
		if len(gens) > 1 {
			var parts []string
			for _, gen := range sortedKeysOf(gens) {
				parts = append(parts, fmt.Sprintf("%s: %s", gen, hostlist.Abbrev(gens[gen])))
			}
			g.add(Finding{System: "slurm", Class: DriftMixedGeneration, Subject: what + " " + l.Name, Got: strings.Join(sortedKeysOf(gens), ","),
				Message: fmt.Sprintf("%s %s mixes generations (%s): a job across it runs at the slowest one's speed", what, l.Name, strings.Join(parts, "; "))})
		}
	}
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func driftKube(g *grouper, t *Topology, st *scheduler.State, o DriftOptions) {
	live := map[string]*scheduler.Node{}
	for i := range st.Nodes {
		live[st.Nodes[i].Name] = &st.Nodes[i]
	}
	want := map[string]bool{}
	prefix := o.LabelPrefix + "/"
	keys := newLabelKeys(o.LabelPrefix, o.ZoneLabel)
	var buf []label
	for _, n := range t.Nodes() {
		want[n.Kubernetes] = true
		ln := live[n.Kubernetes]
		if ln == nil {
			g.node("kubernetes", DriftNodeMissing, n.Kubernetes, "", "", "%s: in the inventory, not in Kubernetes")
			continue
		}
		buf = keys.of(n, buf)
		for _, l := range buf {
			k := l.key
			got, ok := ln.Labels[k]
			switch {
			case !ok:
				g.node("kubernetes", DriftLabelMissing, n.Kubernetes, k+"="+l.value, "", "%s: no label "+k+" (the inventory says "+l.value+")")
			case got != l.value:
				by := ""
				if ms := ln.Managers(k); len(ms) > 0 && !slices.Contains(ms, FieldManager) {
					by = " set by " + strings.Join(ms, ", ") + " (hand-typed, not seam's)"
				}
				g.node("kubernetes", DriftLabelWrong, n.Kubernetes, k+"="+l.value, k+"="+got, "%s: "+k+"="+got+by+"; the inventory says "+l.value)
			}
		}
		for k, v := range ln.Labels {
			if strings.HasPrefix(k, prefix) && !hasKey(buf, k) {
				g.node("kubernetes", DriftLabelUnmanaged, n.Kubernetes, "", k+"="+v, "%s: label "+k+"="+v+" is under seam's prefix but seam does not set it")
			}
		}
	}
	for _, ln := range st.Nodes {
		if want[ln.Name] {
			continue
		}
		for k := range ln.Labels {
			if strings.HasPrefix(k, prefix) {
				g.node("kubernetes", DriftNodeUnknown, ln.Name, "", "", "%s: carries seam's labels, but the inventory has no such node")
				break
			}
		}
	}
	cliques(g, t, live)
	products(g, t, live)
}

// cliques checks NVIDIA's clique labels against the declared scale-up
// domains: two cliques in one domain is an NVLink partition or cabling
// error; one clique across two domains, a domain the inventory splits.
func cliques(g *grouper, t *Topology, live map[string]*scheduler.Node) {
	byDomain := map[string]map[string][]string{} // domain → clique → nodes
	domainsOf := map[string]map[string]bool{}    // clique → domains
	for _, n := range t.Nodes() {
		ln := live[n.Kubernetes]
		if n.Domain == "" || ln == nil {
			continue
		}
		c, ok := ln.Labels[CliqueLabel]
		if !ok {
			c = ""
		}
		if byDomain[n.Domain] == nil {
			byDomain[n.Domain] = map[string][]string{}
		}
		byDomain[n.Domain][c] = append(byDomain[n.Domain][c], n.Kubernetes)
		if c != "" {
			if domainsOf[c] == nil {
				domainsOf[c] = map[string]bool{}
			}
			domainsOf[c][n.Domain] = true
		}
	}
	for _, d := range sortedKeysOf(byDomain) {
		cs := byDomain[d]
		if len(cs) < 2 {
			continue
		}
		var parts []string
		for _, c := range sortedKeysOf(cs) {
			label := c
			if c == "" {
				label = "no clique label"
			}
			parts = append(parts, fmt.Sprintf("%s (%s: %s)", label, plural(len(cs[c]), "node"), hostlist.Abbrev(cs[c])))
		}
		g.add(Finding{System: "kubernetes", Class: DriftCliqueSplit, Subject: "scale-up domain " + d, Got: strings.Join(sortedKeysOf(cs), ","),
			Message: fmt.Sprintf("scale-up domain %s is split across NVLink cliques: %s (an NVLink partition, a tray out of the fabric, or a cabling error)", d, strings.Join(parts, "; "))})
	}
	for _, c := range sortedKeysOf(domainsOf) {
		if ds := sortedSet(domainsOf[c]); len(ds) > 1 {
			g.add(Finding{System: "kubernetes", Class: DriftCliqueSpans, Subject: "clique " + c, Got: strings.Join(ds, ","),
				Message: fmt.Sprintf("NVLink clique %s spans the declared scale-up domains %s", c, strings.Join(ds, ", "))})
		}
	}
}

// products flags leaves whose nodes report two GPU models.
func products(g *grouper, t *Topology, live map[string]*scheduler.Node) {
	for _, l := range t.Leaves() {
		ps := map[string][]string{}
		for _, n := range l.Nodes {
			if ln := live[n.Kubernetes]; ln != nil {
				if p, ok := ln.Labels[ProductLabel]; ok {
					ps[p] = append(ps[p], n.Kubernetes)
				}
			}
		}
		if len(ps) > 1 {
			var parts []string
			for _, p := range sortedKeysOf(ps) {
				parts = append(parts, fmt.Sprintf("%s: %s", p, hostlist.Abbrev(ps[p])))
			}
			g.add(Finding{System: "kubernetes", Class: DriftMixedGeneration, Subject: "leaf " + l.Name, Got: strings.Join(sortedKeysOf(ps), ","),
				Message: fmt.Sprintf("leaf %s mixes GPU models (%s)", l.Name, strings.Join(parts, "; "))})
		}
	}
}

func hasKey(ls []label, k string) bool {
	for _, l := range ls {
		if l.key == k {
			return true
		}
	}
	return false
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "ch") {
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
