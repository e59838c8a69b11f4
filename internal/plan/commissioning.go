package plan

import "slices"

// Commissioning is how the site runs its acceptance as owners do: the
// levels its cases belong to (L1 factory … L5 integrated), the severity
// of an issue a failed case opens, and each level's gate. The site
// states it in its contracts (site.commissioning); a plan compiled from
// a site that states nothing carries DefaultCommissioning.
type Commissioning struct {
	// Commissioned are the levels whose gates a module passes before it
	// moves from installed to commissioned.
	Commissioned []string `json:"commissioned"`
	// Gates are each level's completion rule, by level id.
	Gates map[string]Gate `json:"gates"`
	// Levels in the order a project runs them.
	Levels []CxLevel `json:"levels"`
	// Map gives the level of each kind of test: "fat", "probe",
	// "discover", "sat.steady", "sat.transient", "sat.failure",
	// "ist.failure", "ist.grid" (a level and kind of case, or a command).
	Map map[string]string `json:"map"`
	// Severity of the issue a case opens, by its kind (steady,
	// transient, failure, grid) and "error" for a case that could not be
	// graded: critical, major or minor.
	Severity map[string]string `json:"severity"`
}

// CxLevel is one commissioning level as the site's reports tag it.
type CxLevel struct {
	Colour string `json:"colour"` // a CSS colour, #rrggbb
	ID     string `json:"id"`     // L1 … L5
	Name   string `json:"name"`   // the tag people read: "factory", "functional"
}

// Gate is a level's completion rule.
type Gate struct {
	// AllCases: every case of the level passed, or its issue is waived.
	AllCases bool `json:"all_cases"`
	// MaxOpen is the most issues of each severity that may be open;
	// a severity not named has no limit.
	MaxOpen map[string]int `json:"max_open"`
}

// Severities of an issue, worst first.
const (
	Critical = "critical"
	Major    = "major"
	Minor    = "minor"
)

// Severities lists them worst first.
var Severities = []string{Critical, Major, Minor}

// Commissioning levels' ids.
const (
	L1 = "L1" // factory: the FAT
	L2 = "L2" // installation: probe and discovery
	L3 = "L3" // functional: the SAT's steady values
	L4 = "L4" // performance: the SAT's transients and failure behaviour
	L5 = "L5" // integrated: the IST and the grid
)

// Command keys of Commissioning.Map, for tests that are not plan cases.
const (
	CxProbe    = "probe"
	CxDiscover = "discover"
)

// DefaultCommissioning is the commissioning a site gets when it states
// none: FAT L1; probe and discovery L2; SAT steady L3; SAT transient
// and failure L4; IST and grid L5. Safety and failure behaviour weigh
// more than steady values; an ERROR (an instrument unreachable, a gap)
// is major, owned by the commissioning agent. A gate wants every case
// passed or waived and no open critical or major issue; a module is
// commissioned on the SAT's levels, L3 and L4.
func DefaultCommissioning() *Commissioning {
	strict := func() Gate {
		return Gate{AllCases: true, MaxOpen: map[string]int{Critical: 0, Major: 0}}
	}
	return &Commissioning{
		Commissioned: []string{L3, L4},
		Gates:        map[string]Gate{L1: strict(), L2: strict(), L3: strict(), L4: strict(), L5: strict()},
		Levels: []CxLevel{
			{ID: L1, Name: "factory", Colour: "#6b7280"},
			{ID: L2, Name: "installation", Colour: "#2563eb"},
			{ID: L3, Name: "functional", Colour: "#059669"},
			{ID: L4, Name: "performance", Colour: "#d97706"},
			{ID: L5, Name: "integrated", Colour: "#7c3aed"},
		},
		Map: map[string]string{
			FAT:                   L1,
			CxProbe:               L2,
			CxDiscover:            L2,
			SAT + "." + Steady:    L3,
			SAT + "." + Transient: L4,
			SAT + "." + Failure:   L4,
			IST + "." + Steady:    L5,
			IST + "." + Transient: L5,
			IST + "." + Failure:   L5,
			IST + "." + Grid:      L5,
		},
		Severity: map[string]string{Failure: Critical, Transient: Major, Steady: Minor, Grid: Major, "error": Major},
	}
}

// CommissioningRules is the plan's commissioning, or the default for a
// plan compiled before sites stated one.
func (p *Plan) CommissioningRules() *Commissioning {
	if p.Commissioning != nil {
		return p.Commissioning
	}
	return DefaultCommissioning()
}

// LevelOf is the commissioning level of a case: the one the compiler
// wrote, else the map's for its level and kind ("level.kind", then
// "level"), else "".
func (cx *Commissioning) LevelOf(c *Case) string {
	if c.Commissioning != "" {
		return c.Commissioning
	}
	if l, ok := cx.Map[c.Level+"."+c.Kind]; ok {
		return l
	}
	return cx.Map[c.Level]
}

// SeverityOf is the severity of the issue a case of kind opens
// ("error" for a case that could not be graded); major when unstated.
func (cx *Commissioning) SeverityOf(kind string) string {
	if s, ok := cx.Severity[kind]; ok {
		return s
	}
	return Major
}

// Level is the level of id, and whether the site has it.
func (cx *Commissioning) Level(id string) (CxLevel, bool) {
	i := slices.IndexFunc(cx.Levels, func(l CxLevel) bool { return l.ID == id })
	if i < 0 {
		return CxLevel{}, false
	}
	return cx.Levels[i], true
}

// Boundary is a boundary the plan tests: its supplier and consumer,
// the party (vendor) of each, and every party's signature on the
// contracts the plan was compiled from, as contractc verify found it
// when it compiled.
type Boundary struct {
	Consumer   Party       `json:"consumer"`
	ID         string      `json:"id"`
	Signatures []Signature `json:"signatures"` // one per party the boundary lists, in its order
	Supplier   Party       `json:"supplier"`
}

// Party is one side of a boundary: its module and the module's vendor
// ("" when the module names none).
type Party struct {
	Module string `json:"module"`
	Party  string `json:"party"`
}

// Signature is one party's signature on a boundary: signed, missing,
// stale (over an earlier version) or invalid (internal/sign's statuses).
type Signature struct {
	Key      string `json:"key,omitempty"` // the signing key's fingerprint
	Party    string `json:"party"`
	SignedAt string `json:"signed_at,omitempty"`
	Status   string `json:"status"`
}

// BoundaryOf is the plan's record of boundary id (nil: none).
func (p *Plan) BoundaryOf(id string) *Boundary {
	for i := range p.Boundaries {
		if p.Boundaries[i].ID == id {
			return &p.Boundaries[i]
		}
	}
	return nil
}
