package topology

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// LabelChange is one label server-side apply would change on a node.
type LabelChange struct {
	Node, Key string
	From, To  string // From "": added; To "": removed
	// Unowned marks a removal of a label seam's field manager may not
	// own: server-side apply removes only labels its manager set.
	Unowned bool
}

// LabelPlan is what applying seam's labels would change in Kubernetes.
type LabelPlan struct {
	Changes []LabelChange
	Missing []string // inventory nodes Kubernetes does not have: skipped
}

// PlanLabels compares seam's labels with the live nodes' (restricted to
// the keys under the prefix, and the zone label when it is managed).
func PlanLabels(t *Topology, st *scheduler.State, prefix string, zone bool) *LabelPlan {
	if prefix == "" {
		prefix = DefaultLabelPrefix
	}
	live := map[string]*scheduler.Node{}
	for i := range st.Nodes {
		live[st.Nodes[i].Name] = &st.Nodes[i]
	}
	p := &LabelPlan{}
	for _, n := range t.Nodes() {
		ln := live[n.Kubernetes]
		if ln == nil {
			p.Missing = append(p.Missing, n.Kubernetes)
			continue
		}
		want := Labels(n, prefix, zone)
		for _, k := range sortedKeys(want) {
			if got, ok := ln.Labels[k]; !ok || got != want[k] {
				p.Changes = append(p.Changes, LabelChange{Node: n.Kubernetes, Key: k, From: got, To: want[k]})
			}
		}
		for _, k := range sortedKeys(ln.Labels) {
			if _, ok := want[k]; ok || !strings.HasPrefix(k, prefix+"/") {
				continue
			}
			owned := slices.Contains(ln.Managers(k), FieldManager)
			p.Changes = append(p.Changes, LabelChange{Node: n.Kubernetes, Key: k, From: ln.Labels[k], Unowned: !owned})
		}
	}
	return p
}

// Format writes the plan, one line per change of a key to a value on
// a set of nodes.
func (p *LabelPlan) Format() string {
	type key struct {
		k, from, to string
		unowned     bool
	}
	groups := map[key][]string{}
	var order []key
	for _, c := range p.Changes {
		k := key{c.Key, c.From, c.To, c.Unowned}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c.Node)
	}
	var b strings.Builder
	for _, k := range order {
		nodes := hostlist.Abbrev(groups[k])
		switch {
		case k.to == "" && k.unowned:
			fmt.Fprintf(&b, "  - %s=%s on %s (not set by %s: server-side apply leaves it; remove it by hand)\n", k.k, k.from, nodes, FieldManager)
		case k.to == "":
			fmt.Fprintf(&b, "  - %s=%s on %s\n", k.k, k.from, nodes)
		case k.from == "":
			fmt.Fprintf(&b, "  + %s=%s on %s\n", k.k, k.to, nodes)
		default:
			fmt.Fprintf(&b, "  ~ %s=%s → %s on %s\n", k.k, k.from, k.to, nodes)
		}
	}
	if len(p.Missing) > 0 {
		fmt.Fprintf(&b, "  ! %s not in Kubernetes, skipped (server-side apply would create them): %s\n", plural(len(p.Missing), "node"), hostlist.Abbrev(p.Missing))
	}
	return b.String()
}
