package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
)

// GateResult is a level's gate for one module, evaluated from the
// issues log: the rule, what it counted, and what is missing.
type GateResult struct {
	Module string
	Level  plan.CxLevel
	Rule   plan.Gate
	// RulesFrom is the bundle whose plan stated the rule (the newest
	// recorded for the module).
	RulesFrom string
	// Cases of the level, each as its newest recorded attempt: passed,
	// waived (failed, its issue waived), and the rest.
	Cases, Passed, Waived int
	Bundles               []string            // the bundles the cases come from
	Open                  map[string][]string // open issues by severity
	Missing               []string            // why the gate does not pass, one line each
}

// Pass reports whether the gate passes.
func (g *GateResult) Pass() bool { return len(g.Missing) == 0 }

// Gate evaluates level's gate for module from the issues log.
func (s *Store) Gate(ctx context.Context, level, module string) (*GateResult, error) {
	log, err := s.IssuesLog(ctx, module)
	if err != nil {
		return nil, err
	}
	return log.Gate(level, module)
}

// Gates evaluates level's gate ("": every level the module's rules
// have) for every module the log has recorded bundles of ("" modules:
// all of them), in module order.
func (s *Store) Gates(ctx context.Context, level string, modules []string) ([]*GateResult, error) {
	log, err := s.IssuesLog(ctx, "")
	if err != nil {
		return nil, err
	}
	if len(modules) == 0 {
		modules = log.Modules()
	}
	var out []*GateResult
	for _, m := range modules {
		levels := []string{level}
		if level == "" {
			levels = nil
			if r := log.rules(m); r != nil {
				for _, l := range r.Levels {
					levels = append(levels, l.ID)
				}
			}
		}
		for _, l := range levels {
			g, err := log.Gate(l, m)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
	}
	return out, nil
}

// Modules are the modules the log has recorded bundles of, sorted.
func (l *Log) Modules() []string {
	var out []string
	for _, b := range l.Bundles {
		if !slices.Contains(out, b.Module) {
			out = append(out, b.Module)
		}
	}
	sort.Strings(out)
	return out
}

// rules are the commissioning rules of the newest bundle recorded for
// module (nil: none recorded).
func (l *Log) rules(module string) *plan.Commissioning {
	if b := l.newest(module); b != nil {
		return b.Rules
	}
	return nil
}

func (l *Log) newest(module string) *CxBundle {
	for i := len(l.Bundles) - 1; i >= 0; i-- {
		if l.Bundles[i].Module == module {
			return l.Bundles[i]
		}
	}
	return nil
}

// Gate evaluates level's gate for module: the rule of the newest
// bundle recorded for it; each case of the level as its newest
// recorded attempt; the module's open issues of the level.
func (l *Log) Gate(level, module string) (*GateResult, error) {
	nb := l.newest(module)
	g := &GateResult{Module: module, Level: plan.CxLevel{ID: level}, Open: map[string][]string{}}
	if nb == nil {
		g.Missing = append(g.Missing, fmt.Sprintf("no bundle of module %s is recorded in the issues log: record its evidence with sat issues open --from DIR", module))
		return g, nil
	}
	rules := nb.Rules
	if rules == nil {
		rules = plan.DefaultCommissioning()
	}
	lv, ok := rules.Level(level)
	if !ok {
		var ids []string
		for _, x := range rules.Levels {
			ids = append(ids, x.ID)
		}
		return nil, fmt.Errorf("level %q is not one of the site's commissioning levels (%v, from the plan of bundle %s)", level, ids, nb.Bundle)
	}
	g.Level, g.Rule, g.RulesFrom = lv, rules.Gates[level], nb.Bundle
	latest, from := l.latestCases(level, module)
	waived := map[string]bool{}
	for _, is := range l.Issues {
		if is.Module != module || is.Level != level {
			continue
		}
		switch {
		case is.Open():
			g.Open[is.Severity] = append(g.Open[is.Severity], is.ID)
		case is.Status == IssueWaived:
			waived[is.Case] = true
		}
	}
	ids := make([]string, 0, len(latest))
	for id := range latest {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	g.Cases = len(ids)
	var notPassed []string
	for _, id := range ids {
		switch c := latest[id]; {
		case c.Outcome == string(grade.Pass):
			g.Passed++
		case waived[id] && c.Outcome != string(grade.Skipped):
			g.Waived++
		default:
			notPassed = append(notPassed, fmt.Sprintf("%s (%s)", id, c.Outcome))
		}
	}
	g.Bundles = from
	if g.Cases == 0 {
		g.Missing = append(g.Missing, fmt.Sprintf("no case of level %s (%s) of module %s is recorded: run and record its plan", level, lv.Name, module))
	}
	if g.Rule.AllCases && len(notPassed) > 0 {
		g.Missing = append(g.Missing, fmt.Sprintf("%d case(s) neither passed nor waived: %s", len(notPassed), listSome(notPassed, 5)))
	}
	for _, sev := range plan.Severities {
		limit, limited := g.Rule.MaxOpen[sev]
		if open := g.Open[sev]; limited && len(open) > limit {
			g.Missing = append(g.Missing, fmt.Sprintf("%d open %s issue(s), at most %d allowed: %s", len(open), sev, limit, listSome(open, 5)))
		}
	}
	return g, nil
}

// latestCases is each case of level of module as its newest recorded
// attempt, and the bundles they come from.
func (l *Log) latestCases(level, module string) (map[string]CxCase, []string) {
	latest := map[string]CxCase{}
	src := map[string]string{}
	for _, b := range l.Bundles {
		if b.Module != module {
			continue
		}
		for _, c := range b.Cases {
			if c.Level == level {
				latest[c.ID], src[c.ID] = c, b.Bundle
			}
		}
	}
	var from []string
	for _, b := range src {
		if !slices.Contains(from, b) {
			from = append(from, b)
		}
	}
	sort.Strings(from)
	return latest, from
}

func listSome(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:n], ", "), len(list)-n)
}

// gateEvidence evaluates the gates installed → commissioned needs for
// every module that moves (the element's, or, for the site, each
// module of what moves), on the issues log with what a dry run would
// have recorded; it returns the bundles the gates counted as the
// transition's evidence, or refuses naming what each gate misses.
func (s *Store) gateEvidence(ctx context.Context, el *Element, set []*Element, recorded []Recorded) ([]Evidence, error) {
	log, err := s.IssuesLog(ctx, "")
	if err != nil {
		return nil, err
	}
	if s.dry.Active() {
		for _, r := range recorded {
			if r.doc != "" {
				if err := log.apply(0, s.clock(), EvCommissioning, "(dry run)", r.doc); err != nil {
					return nil, err
				}
			}
		}
	}
	modules := movingModules(el, set, log)
	if len(modules) == 0 {
		return nil, &EvidenceError{Element: el.Key, Need: NeedSAT, Detail: "no module's evidence is recorded in the issues log: record its SAT bundle with sat issues open --from DIR (or give --evidence DIR)"}
	}
	var out []Evidence
	var missing []string
	seen := map[string]bool{}
	for _, m := range modules {
		rules := log.rules(m)
		if rules == nil {
			missing = append(missing, fmt.Sprintf("module %s: no bundle of it is recorded in the issues log (sat issues open --from DIR)", m))
			continue
		}
		for _, level := range rules.Commissioned {
			g, err := log.Gate(level, m)
			if err != nil {
				return nil, err
			}
			for _, why := range g.Missing {
				missing = append(missing, fmt.Sprintf("module %s, gate %s (%s): %s", m, level, g.Level.Name, why))
			}
			for _, id := range g.Bundles {
				if b := log.bundle(id, m); b != nil && !seen[m+" "+id] {
					seen[m+" "+id] = true
					out = append(out, Evidence{Kind: NeedSAT, Ref: b.Dir, Digest: b.Manifest, Module: m, Bundle: b.Bundle, SignedBy: b.SignedBy, Cases: len(b.Cases)})
				}
			}
		}
	}
	if len(missing) > 0 {
		return nil, &EvidenceError{Element: el.Key, Need: NeedSAT, Detail: "installed → commissioned needs the commissioning gates to pass: " + strings.Join(missing, "; ") + " (sat gate LEVEL --module M says more)"}
	}
	return out, nil
}

// movingModules are the modules whose gates a move needs: the
// element's module; for an element outside every module (the site),
// the modules of what moves with it that the log has bundles of.
func movingModules(el *Element, set []*Element, log *Log) []string {
	if el.Module != "" {
		return []string{el.Module}
	}
	recorded := log.Modules()
	var out []string
	for _, e := range set {
		m := e.Module
		if m == "" && e.Key == el.Key {
			m = e.Key
		}
		if m != "" && slices.Contains(recorded, m) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// bundle is the newest record of bundle id for module (nil: none).
func (l *Log) bundle(id, module string) *CxBundle {
	for i := len(l.Bundles) - 1; i >= 0; i-- {
		if b := l.Bundles[i]; b.Bundle == id && b.Module == module {
			return b
		}
	}
	return nil
}
