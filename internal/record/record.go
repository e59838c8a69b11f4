// Package record is the handover record of a site's commissioning: one
// index, per module and commissioning level, of every evidence bundle
// the lifecycle store's issues log recorded (by manifest digest, with
// its verdict and signatures), every issue with its closure, every
// waiver, each level's gate and every contract with its signers. Build
// makes it from the issues log alone; Write writes it as record.json
// (seam.record/v1) and record.html (printable); Check finds a bundle it
// names that is missing, broken or another bundle (sat verify RECORD).
package record

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/plan"
)

// Format names the record's format.
const Format = "seam.record/v1"

// File names in a record's directory.
const (
	JSONFile = "record.json"
	HTMLFile = "record.html"
	SigFile  = "record.json.sig" // an SSHSIG over record.json (namespace seam-record)
	PDFFile  = "record.pdf"
)

// Record is the handover record.
type Record struct {
	Format string `json:"format"`
	Site   string `json:"site"`
	// Store is the lifecycle store's id; StoreHead its newest seal when
	// the record was made (sat lifecycle check --anchor finds a store
	// that no longer holds it).
	Store     string     `json:"store,omitempty"`
	StoreHead *StoreHead `json:"store_head,omitempty"`
	Generated time.Time  `json:"generated"`
	Tool      string     `json:"tool"`
	// Bundles is every bundle the record names, once per directory it
	// was recorded from: what sat verify checks.
	Bundles []Bundle `json:"bundles"`
	Modules []Module `json:"modules"`
}

// StoreHead is the store's seal the record was made at.
type StoreHead struct {
	Event int64  `json:"event"`
	Hash  string `json:"hash"`
	At    string `json:"at"`
}

// Bundle is one evidence bundle as the issues log recorded it, newest
// recording first: at Dir, the path given when it was recorded (sat
// issues open --from, sat run --lifecycle).
type Bundle struct {
	ID       string `json:"id"`
	Dir      string `json:"dir"`
	Manifest string `json:"manifest"` // sha256 of manifest.json: fixed when the run ends
	// Head is the journal's last record hash when it was last recorded
	// (a signed amendment since moves it on; the bundle must still hold it).
	Head       string    `json:"head"`
	Plan       string    `json:"plan"`       // the plan's digest
	PlanLevel  string    `json:"plan_level"` // fat, sat, ist, all
	Modules    []string  `json:"modules"`
	Outcome    string    `json:"outcome"`
	SignedBy   string    `json:"signed_by"`
	RecordedAt time.Time `json:"recorded_at"`
	RecordedBy string    `json:"recorded_by"`
	// Signatures are the bundle's seals and manifest signature by
	// signer, as sat record read the bundle (Check fills them in).
	Signatures []Signature `json:"signatures,omitempty"`
}

// Signature is one signer of a bundle: its key, role (run, witness,
// acceptance, attach, manifest) and name, and its last signature's time.
type Signature struct {
	Role string    `json:"role"`
	By   string    `json:"by,omitempty"`
	Key  string    `json:"key"`
	At   time.Time `json:"at"`
}

// Module is one module's commissioning.
type Module struct {
	Name      string     `json:"name"`
	Levels    []Level    `json:"levels"`
	Waivers   []Waiver   `json:"waivers"`
	Contracts []Contract `json:"contracts"`
}

// Level is one commissioning level of a module: its gate, the bundles
// with cases of the level and the issues of the level.
type Level struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Colour string `json:"colour,omitempty"`
	// Gate is nil for a level the site's rules do not have (a case
	// tagged with one).
	Gate    *Gate         `json:"gate,omitempty"`
	Bundles []LevelBundle `json:"bundles"`
	Issues  []Issue       `json:"issues"`
}

// Gate is a level's gate as the issues log stood.
type Gate struct {
	Pass      bool                `json:"pass"`
	Rule      plan.Gate           `json:"rule"`
	RulesFrom string              `json:"rules_from"`
	Cases     int                 `json:"cases"`
	Passed    int                 `json:"passed"`
	Waived    int                 `json:"waived"`
	Open      map[string][]string `json:"open"`
	Missing   []string            `json:"missing"`
	Bundles   []string            `json:"bundles"` // the bundles its cases' newest attempts come from
}

// LevelBundle is a bundle with cases of a level, and its cases of the
// level counted by outcome.
type LevelBundle struct {
	ID       string         `json:"id"`
	Dir      string         `json:"dir"`
	Manifest string         `json:"manifest"`
	Plan     string         `json:"plan"`
	Outcome  string         `json:"outcome"`
	SignedBy string         `json:"signed_by"`
	Cases    map[string]int `json:"cases"`
}

// Issue is an issue of the log and how it closed.
type Issue struct {
	ID          string    `json:"id"`
	Level       string    `json:"level"`
	Case        string    `json:"case"`
	Kind        string    `json:"kind"`
	Boundary    string    `json:"boundary"`
	Clause      string    `json:"clause"`
	Outcome     string    `json:"outcome"`
	Description string    `json:"description"`
	Severity    string    `json:"severity"`
	Owner       string    `json:"owner"`
	OwnerRole   string    `json:"owner_role"`
	Status      string    `json:"status"`
	Bundle      string    `json:"bundle"`
	Manifest    string    `json:"manifest"`
	Opened      time.Time `json:"opened"`
	OpenedBy    string    `json:"opened_by"`
	Due         time.Time `json:"due"`
	Closure     *Closure  `json:"closure,omitempty"`
}

// Closure is how an issue closed: a passing retry, or a waiver.
type Closure struct {
	Kind     string    `json:"kind"` // closed or waived
	At       time.Time `json:"at"`
	By       string    `json:"by"`
	Reason   string    `json:"reason"`
	Bundle   string    `json:"bundle,omitempty"`
	Manifest string    `json:"manifest,omitempty"`
	Segment  int       `json:"segment,omitempty"` // the retry amendment
}

// Waiver is a waived issue, listed apart: what was accepted as it is.
type Waiver struct {
	Issue    string    `json:"issue"`
	Level    string    `json:"level"`
	Case     string    `json:"case"`
	Severity string    `json:"severity"`
	Owner    string    `json:"owner"`
	At       time.Time `json:"at"`
	By       string    `json:"by"`
	Reason   string    `json:"reason"`
}

// Contract is a boundary a module's recorded bundles tested: its
// parties and each party's signature on the contracts, as the plans of
// Bundles carried it (a boundary signed between two plans' compiles
// appears once per state).
type Contract struct {
	Boundary   string           `json:"boundary"`
	Supplier   plan.Party       `json:"supplier"`
	Consumer   plan.Party       `json:"consumer"`
	Signatures []plan.Signature `json:"signatures"`
	Bundles    []string         `json:"bundles"`
}

// Source is what the record says about where it came from.
type Source struct {
	Site, Store string
	StoreHead   *StoreHead
	Generated   time.Time
	Tool        string
}

// Build makes the record of log: every module it has bundles of, each
// level of the module's rules (the newest recorded plan's) with its
// gate, then any other level a case or issue is tagged with.
func Build(src Source, log *lifecycle.Log) (*Record, error) {
	r := &Record{Format: Format, Site: src.Site, Store: src.Store, StoreHead: src.StoreHead, Generated: src.Generated.UTC(), Tool: src.Tool,
		Bundles: bundles(log), Modules: []Module{}}
	for _, m := range log.Modules() {
		mod, err := module(log, m)
		if err != nil {
			return nil, err
		}
		r.Modules = append(r.Modules, mod)
	}
	return r, nil
}

// key is a bundle as recorded from one directory.
type key struct{ id, dir string }

func keyOf(b *lifecycle.CxBundle) key { return key{b.Bundle, b.Dir} }

func (k key) less(o key) int {
	if c := strings.Compare(k.id, o.id); c != 0 {
		return c
	}
	return strings.Compare(k.dir, o.dir)
}

// newest is each bundle's newest recording of module ("": any), and
// the bundles in order.
func newest(log *lifecycle.Log, module string) (map[key]*lifecycle.CxBundle, []key) {
	by := map[key]*lifecycle.CxBundle{}
	for _, b := range log.Bundles {
		if module == "" || b.Module == module {
			by[keyOf(b)] = b
		}
	}
	keys := make([]key, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, key.less)
	return by, keys
}

// bundles lists every bundle once per directory, from its newest
// recording, with the modules it was recorded for.
func bundles(log *lifecycle.Log) []Bundle {
	by, keys := newest(log, "")
	modules := map[key][]string{}
	for _, b := range log.Bundles {
		if k := keyOf(b); !slices.Contains(modules[k], b.Module) {
			modules[k] = append(modules[k], b.Module)
		}
	}
	out := []Bundle{}
	for _, k := range keys {
		b := by[k]
		ms := modules[k]
		sort.Strings(ms)
		out = append(out, Bundle{ID: b.Bundle, Dir: b.Dir, Manifest: b.Manifest, Head: b.Head, Plan: b.Plan, PlanLevel: b.Level, Modules: ms,
			Outcome: b.Outcome, SignedBy: b.SignedBy, RecordedAt: b.RecordedAt.UTC(), RecordedBy: b.RecordedBy})
	}
	return out
}

// module is one module's part of the record.
func module(log *lifecycle.Log, m string) (Module, error) {
	by, keys := newest(log, m)
	mod := Module{Name: m, Waivers: []Waiver{}, Contracts: contracts(log, m)}
	for _, lv := range levelsOf(log, m, by) {
		l := Level{ID: lv.ID, Name: lv.Name, Colour: lv.Colour, Bundles: []LevelBundle{}, Issues: []Issue{}}
		if lv.Name != "" {
			g, err := log.Gate(lv.ID, m)
			if err != nil {
				return mod, fmt.Errorf("module %s, level %s: %w", m, lv.ID, err)
			}
			l.Gate = gateOf(g)
		} else {
			l.Name = "not a level of the site's commissioning"
		}
		for _, k := range keys {
			if lb, ok := levelBundle(by[k], lv.ID); ok {
				l.Bundles = append(l.Bundles, lb)
			}
		}
		for _, is := range sortedIssues(log, m) {
			if is.Level == lv.ID {
				l.Issues = append(l.Issues, issueOf(is))
			}
		}
		mod.Levels = append(mod.Levels, l)
	}
	for _, is := range sortedIssues(log, m) {
		if is.Status == lifecycle.IssueWaived && is.Closure != nil {
			mod.Waivers = append(mod.Waivers, Waiver{Issue: is.ID, Level: is.Level, Case: is.Case, Severity: is.Severity, Owner: is.Owner,
				At: is.Closure.At.UTC(), By: is.Closure.By, Reason: is.Closure.Reason})
		}
	}
	return mod, nil
}

// levelsOf are the levels of the rules of the module's newest recorded
// bundle, then any other level its cases or issues carry (with no name:
// they have no gate), sorted.
func levelsOf(log *lifecycle.Log, m string, by map[key]*lifecycle.CxBundle) []plan.CxLevel {
	var rules *plan.Commissioning
	for _, b := range log.Bundles {
		if b.Module == m {
			rules = b.Rules
		}
	}
	if rules == nil {
		rules = plan.DefaultCommissioning()
	}
	out := slices.Clone(rules.Levels)
	known := func(id string) bool {
		return slices.ContainsFunc(out, func(l plan.CxLevel) bool { return l.ID == id })
	}
	var extra []string
	add := func(id string) {
		if !known(id) && !slices.Contains(extra, id) {
			extra = append(extra, id)
		}
	}
	for _, b := range by {
		for _, c := range b.Cases {
			add(c.Level)
		}
	}
	for _, is := range log.Issues {
		if is.Module == m {
			add(is.Level)
		}
	}
	sort.Strings(extra)
	for _, id := range extra {
		out = append(out, plan.CxLevel{ID: id})
	}
	return out
}

// levelBundle is b's cases of level counted by outcome (false: none).
func levelBundle(b *lifecycle.CxBundle, level string) (LevelBundle, bool) {
	cases := map[string]int{}
	for _, c := range b.Cases {
		if c.Level == level {
			cases[c.Outcome]++
		}
	}
	if len(cases) == 0 {
		return LevelBundle{}, false
	}
	return LevelBundle{ID: b.Bundle, Dir: b.Dir, Manifest: b.Manifest, Plan: b.Plan, Outcome: b.Outcome, SignedBy: b.SignedBy, Cases: cases}, true
}

func gateOf(g *lifecycle.GateResult) *Gate {
	out := &Gate{Pass: g.Pass(), Rule: g.Rule, RulesFrom: g.RulesFrom, Cases: g.Cases, Passed: g.Passed, Waived: g.Waived,
		Open: map[string][]string{}, Missing: append([]string{}, g.Missing...), Bundles: append([]string{}, g.Bundles...)}
	for sev, ids := range g.Open {
		out.Open[sev] = append([]string{}, ids...)
	}
	return out
}

// sortedIssues are module m's issues by number (m-2 before m-10).
func sortedIssues(log *lifecycle.Log, m string) []*lifecycle.Issue {
	var out []*lifecycle.Issue
	for _, is := range log.Issues {
		if is.Module == m {
			out = append(out, is)
		}
	}
	slices.SortStableFunc(out, func(a, b *lifecycle.Issue) int { return compareIssueIDs(a.ID, b.ID) })
	return out
}

// compareIssueIDs orders MODULE-N ids by module, then number.
func compareIssueIDs(a, b string) int {
	am, an := splitID(a)
	bm, bn := splitID(b)
	if c := strings.Compare(am, bm); c != 0 {
		return c
	}
	if an != bn {
		return an - bn
	}
	return strings.Compare(a, b)
}

func splitID(id string) (string, int) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return id, 0
	}
	n, err := strconv.Atoi(id[i+1:])
	if err != nil {
		return id, 0
	}
	return id[:i], n
}

func issueOf(is *lifecycle.Issue) Issue {
	out := Issue{ID: is.ID, Level: is.Level, Case: is.Case, Kind: is.Kind, Boundary: is.Boundary, Clause: is.Clause, Outcome: is.Outcome,
		Description: is.Description, Severity: is.Severity, Owner: is.Owner, OwnerRole: is.OwnerRole, Status: is.Status,
		Bundle: is.Bundle, Manifest: is.Manifest, Opened: is.Opened.UTC(), OpenedBy: is.OpenedBy, Due: is.Due.UTC()}
	if c := is.Closure; c != nil {
		out.Closure = &Closure{Kind: c.Kind, At: c.At.UTC(), By: c.By, Reason: c.Reason, Bundle: c.Bundle, Manifest: c.Manifest, Segment: c.Segment}
	}
	return out
}

// contracts are the boundaries module m's recorded bundles tested,
// once per state of their parties and signatures, in the order the log
// first saw each, then by boundary.
func contracts(log *lifecycle.Log, m string) []Contract {
	out := []Contract{}
	index := map[string]int{}
	for _, b := range log.Bundles {
		if b.Module != m {
			continue
		}
		for _, bd := range b.Boundaries {
			state, _ := json.Marshal(bd)
			i, ok := index[string(state)]
			if !ok {
				i = len(out)
				index[string(state)] = i
				out = append(out, Contract{Boundary: bd.ID, Supplier: bd.Supplier, Consumer: bd.Consumer,
					Signatures: append([]plan.Signature{}, bd.Signatures...), Bundles: []string{}})
			}
			if !slices.Contains(out[i].Bundles, b.Bundle) {
				out[i].Bundles = append(out[i].Bundles, b.Bundle)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Contract) int { return strings.Compare(a.Boundary, b.Boundary) })
	return out
}
