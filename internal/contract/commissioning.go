package contract

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/plan"
)

// Commissioning rule ids.
const (
	RuleCxLevel = "CX001"
	RuleCxMap   = "CX002"
)

var cxRules = map[string]string{
	RuleCxLevel: "a commissioning level the site does not have (it has L1 … L5), named in site.commissioning's levels, map, gates or commissioned",
	RuleCxMap:   "a commissioning map key that is no kind of test: not fat, probe, discover, a level (sat) or a level and kind (sat.steady)",
}

// Commissioning is what the site states of its commissioning
// (site.commissioning): overrides of plan.DefaultCommissioning, each
// with its position. Rules merges them onto the defaults.
type Commissioning struct {
	Levels       []*CxLevel   // sorted by id
	Map          []*CxMapping // sorted by key
	Severity     map[string]string
	Gates        []*CxGate // sorted by level
	Commissioned []Ref     // nil: not stated
	Pos          diag.Pos
}

// CxLevel overrides a level's tag; an empty Name or Colour keeps the
// default's.
type CxLevel struct {
	ID, Name, Colour string
	Pos              diag.Pos
}

// CxMapping puts a kind of test at a level.
type CxMapping struct {
	Key   string // "sat.steady", "probe"
	Level Ref
}

// CxGate overrides a level's gate. A nil AllCases keeps the default's;
// a non-nil MaxOpen replaces the default's limits.
type CxGate struct {
	Level    string
	AllCases *bool
	MaxOpen  map[string]int
	Pos      diag.Pos
}

func (d *decoder) commissioning(site node) *Commissioning {
	site.path = "site"
	n := site.at("commissioning")
	if !n.exists() {
		return nil
	}
	cx := &Commissioning{Severity: map[string]string{}, Pos: n.pos()}
	for _, l := range n.entries("levels") {
		cx.Levels = append(cx.Levels, &CxLevel{ID: l.name, Name: l.str("name"), Colour: l.str("colour"), Pos: l.pos()})
	}
	for _, m := range n.entries("map") {
		s, _ := m.v.String()
		cx.Map = append(cx.Map, &CxMapping{Key: m.name, Level: Ref{To: s, Pos: m.pos()}})
	}
	for _, s := range n.entries("severity") {
		cx.Severity[s.name], _ = s.v.String()
	}
	for _, g := range n.entries("gates") {
		gate := &CxGate{Level: g.name, AllCases: g.boolp("all_cases"), Pos: g.pos()}
		if mo := g.at("max_open"); mo.exists() {
			gate.MaxOpen = map[string]int{}
			for _, s := range mo.fields() {
				i, _ := s.v.Int64()
				gate.MaxOpen[s.name] = int(i)
			}
		}
		cx.Gates = append(cx.Gates, gate)
	}
	if c := n.at("commissioned"); c.exists() {
		cx.Commissioned = n.refs("commissioned")
		if cx.Commissioned == nil {
			cx.Commissioned = []Ref{}
		}
	}
	return cx
}

// CommissioningRules is the site's commissioning: its overrides merged
// onto plan.DefaultCommissioning. A level the defaults do not have is
// ignored (vet reports it).
func (c *Contracts) CommissioningRules() *plan.Commissioning {
	out := plan.DefaultCommissioning()
	cx := c.Commissioning
	if cx == nil {
		return out
	}
	for _, l := range cx.Levels {
		i := slices.IndexFunc(out.Levels, func(d plan.CxLevel) bool { return d.ID == l.ID })
		if i < 0 {
			continue
		}
		if l.Name != "" {
			out.Levels[i].Name = l.Name
		}
		if l.Colour != "" {
			out.Levels[i].Colour = l.Colour
		}
	}
	_, known := levelIDs(out)
	for _, m := range cx.Map {
		if known[m.Level.To] && cxMapKey.MatchString(m.Key) {
			out.Map[m.Key] = m.Level.To
		}
	}
	// A whole level the site maps ("sat") takes every kind of it the site
	// does not map itself: the defaults' "sat.steady" would otherwise win.
	stated := map[string]bool{}
	for _, m := range cx.Map {
		stated[m.Key] = true
	}
	for key := range out.Map {
		level, _, kind := strings.Cut(key, ".")
		if kind && stated[level] && !stated[key] {
			delete(out.Map, key)
		}
	}
	maps.Copy(out.Severity, cx.Severity)
	for _, g := range cx.Gates {
		if !known[g.Level] {
			continue
		}
		gate := out.Gates[g.Level]
		if g.AllCases != nil {
			gate.AllCases = *g.AllCases
		}
		if g.MaxOpen != nil {
			gate.MaxOpen = maps.Clone(g.MaxOpen)
		}
		out.Gates[g.Level] = gate
	}
	if cx.Commissioned != nil {
		out.Commissioned = []string{}
		for _, r := range cx.Commissioned {
			if known[r.To] && !slices.Contains(out.Commissioned, r.To) {
				out.Commissioned = append(out.Commissioned, r.To)
			}
		}
	}
	return out
}

// cxMapKey is what a commissioning map key may be: a command, a level,
// or a level and kind of case (plan.Commissioning.LevelOf looks them up).
var cxMapKey = regexp.MustCompile(`^((fat|sat|ist)(\.(steady|transient|failure|grid))?|probe|discover)$`)

// levelIDs lists the levels' ids in order, and as a set.
func levelIDs(cx *plan.Commissioning) ([]string, map[string]bool) {
	var ids []string
	set := map[string]bool{}
	for _, l := range cx.Levels {
		ids = append(ids, l.ID)
		set[l.ID] = true
	}
	return ids, set
}

// checkCommissioning reports the site's commissioning references that
// name no level (CX001) and map keys that are no kind of test (CX002).
func checkCommissioning(c *Contracts, diags *diag.List) {
	cx := c.Commissioning
	if cx == nil {
		return
	}
	rules := c.CommissioningRules()
	ids, known := levelIDs(rules)
	var names []string
	for _, l := range rules.Levels {
		names = append(names, l.ID+" ("+l.Name+")")
	}
	hint := "name one of the site's commissioning levels: " + strings.Join(names, ", ")
	const base = "site.commissioning"
	unknown := func(path, id string, pos diag.Pos) {
		diags.Add(diag.Diagnostic{Rule: RuleCxLevel, Severity: diag.Error, Pos: pos, Path: path,
			Message: fmt.Sprintf("%s: %q is not a commissioning level of the site (it has %s)", path, id, strings.Join(ids, ", ")), Hint: hint})
	}
	for _, l := range cx.Levels {
		if !known[l.ID] {
			unknown(base+".levels."+l.ID, l.ID, l.Pos)
		}
	}
	for _, m := range cx.Map {
		path := base + ".map." + quoteLabel(m.Key)
		if !cxMapKey.MatchString(m.Key) {
			diags.Add(diag.Diagnostic{Rule: RuleCxMap, Severity: diag.Error, Pos: m.Level.Pos, Path: path,
				Message: fmt.Sprintf("%s: %q is no kind of test, so no case or command takes this level", path, m.Key),
				Hint:    `write fat, probe, discover, a level (sat, ist) or a level and kind: ` + strings.Join(mapKeys(), ", ")})
		}
		if !known[m.Level.To] {
			unknown(path, m.Level.To, m.Level.Pos)
		}
	}
	for _, g := range cx.Gates {
		if !known[g.Level] {
			unknown(base+".gates."+g.Level, g.Level, g.Pos)
		}
	}
	for i, r := range cx.Commissioned {
		if !known[r.To] {
			unknown(fmt.Sprintf("%s.commissioned[%d]", base, i), r.To, r.Pos)
		}
	}
}

// mapKeys are the default map's keys, sorted: the kinds of test a site
// usually maps.
func mapKeys() []string {
	return slices.Sorted(maps.Keys(plan.DefaultCommissioning().Map))
}
