package burnin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ScopeRepair is a re-test pair: a node flagged on its ring pairs
// alone run with a partner already known good, before it is held on
// them (a node whose two ring neighbours are both slow has two low
// pairs and nothing wrong).
const ScopeRepair = "repair"

// suspect is a node flagged on its ring pairs, and what the re-test
// goes by.
type suspect struct {
	n       *NodeResult
	low     []*Group // its ring pairs that are evidence (all low)
	t       float64  // the pair threshold it is held to
	median  float64  // the pair cohort's median
	partner string   // the node known good it is re-paired with
}

// repair re-tests every node flagged on its ring pairs: the pair
// evidence alone cannot tell a slow node from one between two slow
// neighbours. Run live, each is re-paired with a node of its rack known
// good (no problem, flag or re-test of its own, its ring neighbours
// last) and held only if that pair is low too, the flag then naming the
// re-test and its ring pairs; a re-test that is fine clears the pair
// flag. From a Recording, which cannot re-test, a node is held when a
// recorded pair with a node known good is low (that pair is the
// re-test), else implicated for a re-test (NodeResult.Retest) and not
// held. A node with no partner known good is implicated for a re-test
// too.
func (r *runner) repair(ctx context.Context, an Analysis) {
	var suspects []*suspect
	for _, n := range r.res.Nodes {
		if slices.ContainsFunc(n.Flags, isPairFlag) {
			t, med := r.pairThreshold(an, n)
			suspects = append(suspects, &suspect{n: n, low: r.evidencePairs(n.Name), t: t, median: med})
		}
	}
	if len(suspects) == 0 {
		return
	}
	good := map[string]bool{}
	for _, n := range r.res.Nodes {
		if n.answered && !n.unread && len(n.Problems) == 0 && len(n.Flags) == 0 && len(n.Retest) == 0 {
			good[n.Name] = true
		}
	}
	_, racks := r.racks()
	rec, recording := r.exec.(Recording)
	var jobs []*suspect
	k := map[string]int{} // suspects seen per rack: partners rotate
	for _, s := range suspects {
		cands := r.partners(s, racks[s.n.Rack], good)
		if recording {
			if by := r.knownGoodPairs(s, good); len(by) > 0 {
				r.reflag(s, fmt.Sprintf("its recorded pair with %s, known good, was low too: implicated by the pairs %s", strings.Join(by, ", "), pairList(s.low)), nil)
				continue
			}
			cands = slices.DeleteFunc(cands, func(p string) bool { return !rec.Has(Job{Step: ScopeRepair, Nodes: []string{s.n.Name, p}}) })
		}
		if len(cands) == 0 {
			r.unflag(s)
			why := "no node of rack " + s.n.Rack + " is known good to re-pair it with"
			if recording {
				why = "no recorded run pairs it with a node known good: re-pair it with one that passed and grade again"
			}
			s.n.Retest = append(s.n.Retest, fmt.Sprintf("node %s: implicated, re-test needed: its pairs %s were low (threshold %.1f), and %s", s.n.Name, pairList(s.low), s.t, why))
			continue
		}
		s.partner = cands[k[s.n.Rack]%len(cands)]
		k[s.n.Rack]++
		jobs = append(jobs, s)
	}
	r.addTotal(len(jobs))
	// in waves: no node runs two jobs at once (a partner may serve
	// several suspects)
	for len(jobs) > 0 {
		busy := map[string]bool{}
		var wave, next []*suspect
		for _, s := range jobs {
			if busy[s.partner] {
				next = append(next, s)
				continue
			}
			busy[s.partner] = true
			wave = append(wave, s)
		}
		groups := make([]*Group, len(wave))
		forEach(len(wave), func(i int) {
			s := wave[i]
			groups[i] = r.group(ctx, ScopeRepair, "", groupSpec{name: s.n.Name + "+" + s.partner, members: []string{s.n.Name, s.partner}})
		})
		for i, g := range groups {
			r.judgeRepair(wave[i], g)
		}
		jobs = next
	}
}

// judgeRepair holds or clears a suspect on its re-test.
func (r *runner) judgeRepair(s *suspect, g *Group) {
	g.Threshold = s.t
	g.Low = g.Problem != "" || g.BusBW < s.t
	r.res.mu.Lock()
	r.res.Groups = append(r.res.Groups, g)
	r.res.mu.Unlock()
	switch {
	case g.Problem != "":
		r.problem(s.n, "node %s: re-paired with %s, known good, to re-test its low pairs %s: the run did not read: %s", s.n.Name, s.partner, pairList(s.low), g.Problem)
	case g.Low:
		r.reflag(s, fmt.Sprintf("re-paired with %s, known good: %s %.1f GB/s, still low; implicated by the pairs %s", s.partner, g.Name, g.BusBW, pairList(append(slices.Clone(s.low), g))), g)
	default:
		r.unflag(s) // its partners were slow, not it
	}
}

// reflag replaces a suspect's pair flags with one that says what
// implicated it; g is its re-test (nil: its recorded pairs were).
func (r *runner) reflag(s *suspect, why string, g *Group) {
	f := Flag{Node: s.n.Name, Measure: MeasureBusBW, Scope: ScopePair, Ranks: 2 * r.cfg.GPUs, Median: s.median, Threshold: s.t, Why: why}
	if g != nil {
		f.Ranks, f.Value = g.Ranks, g.BusBW
	} else {
		f.Value = math.Inf(-1)
		for _, p := range s.low {
			f.Value = math.Max(f.Value, p.BusBW)
		}
	}
	r.res.mu.Lock()
	defer r.res.mu.Unlock()
	s.n.Flags = append(slices.DeleteFunc(s.n.Flags, isPairFlag), f)
}

// unflag drops a suspect's pair flags.
func (r *runner) unflag(s *suspect) {
	r.res.mu.Lock()
	defer r.res.mu.Unlock()
	s.n.Flags = slices.DeleteFunc(s.n.Flags, isPairFlag)
}

func isPairFlag(f Flag) bool { return f.Scope == ScopePair && f.Measure == MeasureBusBW }

// partners are the nodes of a suspect's rack known good, those that
// were not its ring neighbours first.
func (r *runner) partners(s *suspect, rack []string, good map[string]bool) []string {
	var fresh, neighbours []string
	for _, m := range rack {
		switch {
		case !good[m] || m == s.n.Name:
		case slices.ContainsFunc(s.low, func(g *Group) bool { return slices.Contains(g.Members, m) }):
			neighbours = append(neighbours, m)
		default:
			fresh = append(fresh, m)
		}
	}
	return append(fresh, neighbours...)
}

// knownGoodPairs are the suspect's partners known good among its low
// pairs.
func (r *runner) knownGoodPairs(s *suspect, good map[string]bool) []string {
	var out []string
	for _, g := range s.low {
		for _, m := range g.Members {
			if m != s.n.Name && good[m] {
				out = append(out, m)
			}
		}
	}
	return out
}

// evidencePairs are the ring pairs of node that count as evidence: run,
// read, and every member with readings of its own.
func (r *runner) evidencePairs(node string) []*Group {
	var out []*Group
	for _, g := range r.res.Groups {
		if g.Scope == ScopePair && g.Problem == "" && slices.Contains(g.Members, node) && r.evidence(g) {
			out = append(out, g)
		}
	}
	return out
}

// pairThreshold is the pair threshold of n's GPU model: the pair
// cohort's robust threshold, or the model's floor, whichever is higher;
// and the cohort's median.
func (r *runner) pairThreshold(an Analysis, n *NodeResult) (float64, float64) {
	t, med := math.Inf(-1), math.NaN()
	for _, c := range an.Cohorts {
		if c.Scope == ScopePair && c.Measure == MeasureBusBW && c.SKU == n.SKU && c.Ranks == 2*r.cfg.GPUs {
			med = c.Median
			if c.N >= 3 {
				t = math.Max(t, c.Threshold)
			}
		}
	}
	if lim, ok := r.cfg.Floors[n.SKU][MeasureBusBW]; ok && (lim.Scopes == nil || slices.Contains(lim.Scopes, ScopePair)) {
		t = math.Max(t, lim.Value)
	}
	for _, f := range n.Flags { // the threshold it was flagged by, at least
		if isPairFlag(f) {
			t = math.Max(t, f.Threshold)
		}
	}
	return t, med
}

// pairList names pairs with their busbw: "a+b 412.3 GB/s, b+c 410.0
// GB/s".
func pairList(gs []*Group) string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = fmt.Sprintf("%s %.1f GB/s", g.Name, g.BusBW)
	}
	return strings.Join(out, ", ")
}
