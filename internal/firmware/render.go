package firmware

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/canon"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// WriteJSON writes the plan as indented JSON.
func (p *Plan) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(p)
}

// WriteText writes the plan for people: its inputs and policy, what
// differs, then each stage: its racks, nodes, holds, skipped nodes,
// updates in order, resets, checks and (--what-if) blast radius.
func (p *Plan) WriteText(w io.Writer) error {
	scope := "site " + p.Site
	if p.Module != "" {
		scope += ", module " + p.Module
	}
	fmt.Fprintf(w, "firmware plan for %s: rollout %s\n", scope, p.Rollout)
	fmt.Fprintf(w, "baseline %s (%s)\ndiscovery %s (%s)\n", p.Baseline.Path, p.Baseline.Digest, p.Discovery.Path, p.Discovery.Digest)
	fmt.Fprintf(w, "policy: %s\n\n", p.policyText())
	s := p.Summary
	fmt.Fprintf(w, "%d trays: %d differ from their baseline (%d of them held by another owner), %d up to date, %d unreached, %d without a baseline\n",
		s.Trays, s.Differ, s.HeldBack, s.UpToDate, s.Unreached, s.NoBaseline)
	p.writeDifferences(w)
	if len(p.Stages) == 0 {
		_, err := fmt.Fprintln(w, "\nnothing to update")
		return err
	}
	fmt.Fprintf(w, "\n%d stage(s): %d node(s) updated, %d component update(s)\n", s.Stages, s.Nodes, s.Updates)
	for _, stg := range p.Stages {
		fmt.Fprintln(w)
		stg.writeText(w)
	}
	return nil
}

func (p *Plan) policyText() string {
	pol := p.Policy
	var out []string
	if pol.CanaryRacks > 0 {
		out = append(out, fmt.Sprintf("a canary stage of %d rack(s) first", pol.CanaryRacks))
	}
	if pol.MaxRacksPerModule > 0 {
		out = append(out, fmt.Sprintf("at most %d rack(s) of a module in a stage", pol.MaxRacksPerModule))
	}
	if pol.MaxNodesPerStage > 0 {
		out = append(out, fmt.Sprintf("at most %d nodes out in a stage", pol.MaxNodesPerStage))
	}
	if pol.WholeScaleUpDomains {
		out = append(out, "whole scale-up domains")
	}
	if pol.ControlPlanesApart {
		var cps []string
		for _, m := range slices.Sorted(maps.Keys(p.ControlPlanes)) {
			cps = append(cps, m+" ("+strings.Join(p.ControlPlanes[m], ", ")+")")
		}
		if len(cps) == 0 {
			cps = []string{"none declared"}
		}
		out = append(out, "one control-plane module at a time: "+strings.Join(cps, ", "))
	}
	if len(out) == 0 {
		return "none: one stage updates everything"
	}
	return strings.Join(out, "; ")
}

func (p *Plan) writeDifferences(w io.Writer) {
	if len(p.Differences) > 0 {
		fmt.Fprintln(w, "\ndifferences:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, d := range p.Differences {
			fmt.Fprintf(tw, "  %s\t%s\t%s → %s\t%d tray(s)\n", d.Baseline, d.Component, from(d.From), d.To, d.Trays)
		}
		tw.Flush()
	}
	if len(p.Unreached) > 0 {
		fmt.Fprintln(w, "\nunreached, not updated:")
		for _, u := range p.Unreached {
			fmt.Fprintf(w, "  %s: %s\n", u.Tray, u.Why)
		}
	}
	for _, m := range p.WithoutBaseline {
		fmt.Fprintf(w, "no baseline for %d tray(s) of model %s\n", m.Trays, m.Model)
	}
}

func from(v string) string {
	if v == "" {
		return "(not reported)"
	}
	return v
}

func (stg *Stage) writeText(w io.Writer) {
	what := ""
	if stg.Canary {
		what = " (canary)"
	}
	fmt.Fprintf(w, "stage %d%s: racks %s (modules %s; failure domains %s)\n", stg.Number, what, strings.Join(stg.Racks, ", "),
		strings.Join(stg.Modules, ", "), strings.Join(stg.FailureDomains, ", "))
	if stg.Exceeds != "" {
		fmt.Fprintf(w, "  exceeds the policy's %s: the stage takes it whole\n", stg.Exceeds)
	}
	byAction := map[string][]string{}
	for _, n := range stg.Nodes {
		byAction[n.Action] = append(byAction[n.Action], nodeName(n.Name, n.Key))
	}
	fmt.Fprintf(w, "  nodes out: %d: %d updated, %d stopped by the updates, %d held already\n", len(stg.Nodes),
		len(byAction[NodeUpdate]), len(byAction[NodeStopped]), len(byAction[NodeHeld]))
	for _, h := range stg.Holds {
		fmt.Fprintf(w, "  hold %s on %d node(s): %s\n", h.Owner, len(h.Nodes), hostlist.Fold(append(byAction[NodeUpdate], byAction[NodeStopped]...)))
	}
	for _, sk := range stg.Skipped {
		fmt.Fprintf(w, "  skipped, held by %s: %s\n", hold.Join(sk.Owners), nodeName(sk.Name, sk.Key))
	}
	stg.writeUpdates(w)
	if stg.BlastRadius != nil {
		fmt.Fprintf(w, "  blast radius: %s\n", impactText(*stg.BlastRadius))
	}
}

func nodeName(name, key string) string {
	if name != "" {
		return name
	}
	return key
}

// writeUpdates groups the stage's updates (component, versions, how
// applied) with how many trays of each kind take them, in the order
// they first come, then the resets and the checks.
func (stg *Stage) writeUpdates(w io.Writer) {
	type group struct {
		baseline string
		u        Update
		trays    int
	}
	var groups []*group
	resets := map[string]int{}
	var resetOrder []string
	checked, burnin := 0, 0
	for _, t := range stg.Trays {
		for _, u := range t.Updates {
			i := slices.IndexFunc(groups, func(g *group) bool {
				return g.baseline == t.Baseline && g.u.Component == u.Component && g.u.From == u.From && g.u.To == u.To
			})
			if i < 0 {
				groups = append(groups, &group{baseline: t.Baseline, u: u})
				i = len(groups) - 1
			}
			groups[i].trays++
		}
		for _, r := range t.Resets {
			if resets[r] == 0 {
				resetOrder = append(resetOrder, r)
			}
			resets[r]++
		}
		checked++
		if slices.ContainsFunc(t.Checks, func(c Check) bool { return c.Check == CheckBurnin }) {
			burnin++
		}
	}
	if len(groups) == 0 {
		fmt.Fprintln(w, "  no updates: every tray that differs is held by another owner")
		return
	}
	fmt.Fprintln(w, "  updates, each tray's in its baseline's order:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, g := range groups {
		fmt.Fprintf(tw, "    %s\t%s\t%s → %s\t%s, reset %s\t%d tray(s)\n", g.baseline, g.u.Component, from(g.u.From), g.u.To, g.u.ApplyTime, g.u.Reset, g.trays)
	}
	tw.Flush()
	var rs []string
	for _, r := range resetOrder {
		rs = append(rs, fmt.Sprintf("%s on %d tray(s)", r, resets[r]))
	}
	if len(rs) == 0 {
		rs = []string{"none"}
	}
	fmt.Fprintf(w, "  resets: %s\n", strings.Join(rs, ", "))
	fmt.Fprintf(w, "  checks: versions read back on %d tray(s); burn-in of %d node(s) before they return to the pool\n", checked, burnin)
}

// impactText is a stage's blast radius in one line.
func impactText(imp inventory.Impact) string {
	if !imp.Stops() && len(imp.Degraded) == 0 {
		return "nothing stops, nothing is degraded"
	}
	parts := []string{"stops no node"}
	if imp.Stops() {
		parts[0] = fmt.Sprintf("stops %d node(s) (%d GPUs)", len(imp.Nodes), imp.GPUs)
	}
	for _, l := range []struct {
		what string
		keys []string
	}{{"racks", imp.Racks}, {"scale-up domains", imp.Domains}, {"modules", imp.Modules}} {
		if len(l.keys) > 0 {
			parts = append(parts, l.what+" "+strings.Join(l.keys, ", "))
		}
	}
	if len(imp.Degraded) > 0 {
		var ds []string
		for _, d := range imp.Degraded[:min(3, len(imp.Degraded))] {
			ds = append(ds, d.Key+" ("+d.Reason+")")
		}
		more := ""
		if len(imp.Degraded) > 3 {
			more = fmt.Sprintf(" and %d more", len(imp.Degraded)-3)
		}
		parts = append(parts, fmt.Sprintf("degraded: %s%s", strings.Join(ds, ", "), more))
	}
	return strings.Join(parts, "; ")
}

// ReadPlan reads a plan's JSON (sat firmware plan --format json)
// strictly, and returns it with its digest; errors name the file and
// the line.
func ReadPlan(file string) (*Plan, string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, "", fmt.Errorf("firmware plan: %w", err)
	}
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, "", fmt.Errorf("%s: not a firmware plan (sat firmware plan --format json): %w", at(file, b, dec.InputOffset(), err), err)
	}
	if p.Format != Format {
		return nil, "", fmt.Errorf("%s: format %q, want %q: make the plan again with this sat", file, p.Format, Format)
	}
	return &p, canon.DigestBytes(b), nil
}
