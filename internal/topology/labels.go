package topology

import (
	"context"
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
// the keys under the prefix, and the zone label when it is asked for or
// seam set it).
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
			if _, ok := want[k]; ok || !strings.HasPrefix(k, prefix+"/") && k != ZoneLabel {
				continue
			}
			owned := slices.Contains(ln.Managers(k), FieldManager)
			if k == ZoneLabel && !owned {
				continue // the zone is seam's only when it set it (--zone-label before)
			}
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

// Labeler reads the cluster's nodes and sets labels by server-side
// apply (internal/scheduler/kubernetes.Nodes).
type Labeler interface {
	scheduler.Scheduler
	ApplyLabels(ctx context.Context, manager string, labels map[string]map[string]string) error
}

// KubeApplyResult is what an apply of seam's labels did.
type KubeApplyResult struct {
	Plan  *LabelPlan // the changes found before applying
	Nodes int        // nodes Kubernetes has
	// Result is ResultDryRun, ResultUnchanged, ResultApplied,
	// ResultRefused (the nodes could not be read: nothing written) or
	// ResultFailed (a write, or the read back, failed).
	Result string
	// Left are the changes still to make after the apply: labels under
	// the prefix that another manager set (server-side apply leaves them).
	Left []LabelChange
	Err  error
}

// ApplyLabels applies seam's labels to the Kubernetes nodes it has: it
// reads them, plans the changes (DryRun stops there), applies to each
// node with a change its whole label set under FieldManager (so a label
// seam set and no longer gives is removed), then reads the nodes again:
// what still differs, but for the labels another manager set, is an
// error. Inventory nodes Kubernetes lacks are skipped, never created.
func ApplyLabels(ctx context.Context, t *Topology, k Labeler, prefix string, zone, dryRun bool) *KubeApplyResult {
	res := &KubeApplyResult{Result: ResultRefused}
	st, err := k.Read(ctx)
	if err != nil {
		res.Err = err
		return res
	}
	res.Nodes = len(st.Nodes)
	res.Plan = PlanLabels(t, st, prefix, zone)
	if dryRun {
		res.Result = ResultDryRun
		return res
	}
	if prefix == "" {
		prefix = DefaultLabelPrefix
	}
	touched := map[string]bool{}
	for _, c := range res.Plan.Changes {
		if c.Unowned {
			res.Left = append(res.Left, c)
		} else {
			touched[c.Node] = true
		}
	}
	if len(touched) == 0 {
		res.Result = ResultUnchanged
		return res
	}
	want := map[string]map[string]string{}
	for _, n := range t.Nodes() {
		if touched[n.Kubernetes] {
			want[n.Kubernetes] = Labels(n, prefix, zone)
		}
	}
	res.Result = ResultFailed
	if err := k.ApplyLabels(ctx, FieldManager, want); err != nil {
		res.Err = err
		return res
	}
	res.Left = nil
	after, err := k.Read(ctx)
	if err != nil {
		res.Err = fmt.Errorf("reading the labels back: %w", err)
		return res
	}
	var wrong []string
	for _, c := range PlanLabels(t, after, prefix, zone).Changes {
		if c.Unowned {
			res.Left = append(res.Left, c)
			continue
		}
		wrong = append(wrong, fmt.Sprintf("%s %s=%q (want %q)", c.Node, c.Key, c.From, c.To))
	}
	if len(wrong) > 0 {
		res.Err = fmt.Errorf("read back after the apply, %d label(s) still differ: %s", len(wrong), strings.Join(wrong, "; "))
		return res
	}
	res.Result = ResultApplied
	return res
}
