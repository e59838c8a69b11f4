// Package compile turns checked contracts into a test plan: FAT cases
// for each supplier's own side, SAT cases for every joint, IST cases for
// every failure clause under load. Every number a check grades comes
// from a contract value, named in the check's sources; every clause in
// scope appears in the coverage table, proved in full, in part (with the
// reason), at another level, or not at all (with a diagnostic).
package compile

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/contracts/schema"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/version"
)

// Options select what to compile.
type Options struct {
	Level   string        // plan.FAT, plan.SAT, plan.IST or plan.All
	Module  string        // restrict the plan to cases involving this module
	MaxHold time.Duration // cap soak holds and square-wave runs (0: no cap)
	Log     *slog.Logger  // nil: discard
	// Signatures are the parties' signatures on each boundary, by
	// boundary id, as internal/sign's Verify found them (contractc
	// compile runs it): the plan records them beside each boundary it
	// tests. A party with none here is recorded as missing, so the
	// compiler stays pure: it reads no signature itself.
	Signatures map[string][]plan.Signature
}

// Diagnostic rule ids of the compiler.
const (
	RuleNoChannel = "PLAN001"
	RuleNoLoad    = "PLAN002"
	RuleNothing   = "PLAN003"
)

// Rules describes the compiler's rule ids.
var Rules = map[string]string{
	RuleNoChannel: "a clause no channel measures: the boundary declares no channel for it",
	RuleNoLoad:    "an excitation or failure load no load bank on the site can produce",
	RuleNothing:   "a clause that states nothing a test could grade",
}

// Levels lists the levels a plan can be compiled for.
var Levels = []string{plan.FAT, plan.SAT, plan.IST, plan.All}

// Dir vets the contracts in dir and compiles them. Contracts with vet
// errors are not compiled: the diagnostics say why. The diagnostics of
// a compiled plan are the compiler's own (untestable clauses).
func Dir(dir string, opt Options) (*plan.Plan, diag.List, error) {
	c, errs, err := Vet(dir)
	if c == nil {
		return nil, errs, err
	}
	return Compile(c, opt)
}

// Vet vets the contracts in dir for Compile: nil contracts and the vet
// errors when there are any, since contracts with errors are not
// compiled.
func Vet(dir string) (*contract.Contracts, diag.List, error) {
	c, diags, err := contract.Vet(dir)
	if err != nil {
		return nil, nil, err
	}
	if c == nil || diags.Count(diag.Error) > 0 {
		var errs diag.List
		for _, d := range diags {
			if d.Severity == diag.Error {
				errs = append(errs, d)
			}
		}
		return nil, errs, nil
	}
	return c, nil, nil
}

// Compile builds the plan for checked contracts. An error means the
// options do not fit the contracts (an unknown level or module) or the
// contracts cannot be digested.
func Compile(c *contract.Contracts, opt Options) (*plan.Plan, diag.List, error) {
	if !slices.Contains(Levels, opt.Level) {
		return nil, nil, fmt.Errorf("unknown level %q: want one of %s", opt.Level, strings.Join(Levels, ", "))
	}
	if opt.Module != "" && c.Site.Module(opt.Module) == nil {
		return nil, nil, fmt.Errorf("no module %q in site %s (modules: %s)", opt.Module, c.Site.Name, moduleIDs(c))
	}
	if opt.MaxHold < 0 {
		return nil, nil, fmt.Errorf("max hold %s is negative", opt.MaxHold)
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dg, err := digests(c)
	if err != nil {
		return nil, nil, err
	}
	k := newCompiler(c, opt, dg)
	for _, level := range []string{plan.FAT, plan.SAT, plan.IST} {
		if opt.Level == plan.All || opt.Level == level {
			k.level(level)
		}
	}
	p := k.finish()
	log.Debug("compiled plan", "site", c.Site.Name, "level", opt.Level, "module", opt.Module,
		"cases", len(p.Cases), "clauses", len(p.Coverage), "estimated_seconds", p.Header.EstimatedS)
	return p, k.diags.Sorted(), nil
}

func moduleIDs(c *contract.Contracts) string {
	var ids []string
	for _, m := range c.Site.Modules {
		ids = append(ids, m.ID)
	}
	return strings.Join(ids, ", ")
}

// compiler holds what the case builders share.
type compiler struct {
	c       *contract.Contracts
	opt     Options
	maxHold float64 // seconds; 0 is no cap
	dg      digestSet
	diags   diag.List
	cases   []*built
	banks   map[string]*contract.LoadBank // the load banks the cases drive
	notes   map[string][]string           // clause path → partial/untestable reasons
	vals    map[string]plan.Source        // contract path → where and what, for sources
	bad     map[string]bool               // clause path → untestable somewhere
	chans   map[*contract.Boundary]map[string]*contract.Channel
}

// built is a case with what ordering needs.
type built struct {
	plan.Case
	loadKW float64          // the highest load the case applies
	locks  []plan.Interlock // the case's interlocks, before they are shared
	deps   []dep            // steady cases it depends on
}

// dep names a case that should pass first.
type dep struct{ level, boundary, kind, clause string }

func (d dep) id() string { return caseID(d.level, d.boundary, d.kind, d.clause) }

func caseID(level, boundary, kind, clause string) string {
	return level + "." + boundary + "." + kind + "." + clause
}

func newCompiler(c *contract.Contracts, opt Options, dg digestSet) *compiler {
	k := &compiler{c: c, opt: opt, maxHold: opt.MaxHold.Seconds(), dg: dg,
		banks: map[string]*contract.LoadBank{}, notes: map[string][]string{}, bad: map[string]bool{}, vals: map[string]plan.Source{},
		chans: map[*contract.Boundary]map[string]*contract.Channel{}}
	for _, b := range c.Boundaries {
		m := map[string]*contract.Channel{}
		for _, ch := range b.Channels {
			m[ch.Name] = ch
		}
		k.chans[b] = m
	}
	return k
}

// inScope reports whether a boundary belongs in the plan at level.
func (k *compiler) inScope(b *contract.Boundary, level string) bool {
	m := k.opt.Module
	if m == "" {
		return true
	}
	if level == plan.FAT {
		return b.Supplier.To == m
	}
	return b.Supplier.To == m || b.Consumer.To == m
}

// level builds the cases of one level.
func (k *compiler) level(level string) {
	for _, b := range k.c.Boundaries {
		if !k.inScope(b, level) {
			continue
		}
		switch level {
		case plan.FAT:
			for _, s := range b.Steady {
				if s.Guarantee.Set {
					k.steady(level, b, s)
				}
			}
			for _, t := range b.Transient {
				if t.Guarantee.Set {
					k.transient(level, b, t)
				}
			}
			for _, f := range b.Failure {
				if f.Guarantee.Set {
					k.failure(level, b, f)
				}
			}
		case plan.SAT:
			for _, s := range b.Steady {
				k.steady(level, b, s)
			}
			for _, t := range b.Transient {
				k.transient(level, b, t)
			}
		case plan.IST:
			for _, f := range b.Failure {
				k.failure(level, b, f)
			}
			k.grid(b)
		}
	}
}

// note records why a clause is proved only in part (or not at all).
func (k *compiler) note(cl *contract.Clause, level, format string, args ...any) {
	r := level + ": " + fmt.Sprintf(format, args...)
	path := cl.Path()
	if !slices.Contains(k.notes[path], r) {
		k.notes[path] = append(k.notes[path], r)
	}
}

// untestable records a clause no case can prove, as a diagnostic.
func (k *compiler) untestable(cl *contract.Clause, level, rule string, pos diag.Pos, hint, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	k.note(cl, level, "%s", msg)
	k.bad[cl.Path()] = true
	if !pos.IsValid() {
		pos = cl.Pos
	}
	d := k.diags.Errorf(rule, pos, cl.Path(), "%s cannot be tested at %s: %s", cl.Path(), strings.ToUpper(level), msg)
	d.Hint = hint
}

func (k *compiler) add(b *built) {
	b.EstimatedS = 0
	for _, s := range b.Steps {
		b.EstimatedS += s.EstimatedS
	}
	b.EstimatedS = tenths(b.EstimatedS)
	k.cases = append(k.cases, b)
}

// finish orders the cases safely, links preconditions and builds the
// header and coverage.
func (k *compiler) finish() *plan.Plan {
	slices.SortStableFunc(k.cases, func(a, b *built) int {
		return cmp.Or(cmp.Compare(levelRank(a.Level), levelRank(b.Level)), cmp.Compare(kindRank(a.Kind), kindRank(b.Kind)),
			cmp.Compare(a.loadKW, b.loadKW), cmp.Compare(a.Boundary, b.Boundary), cmp.Compare(a.ID, b.ID))
	})
	ids, exists := map[string]bool{}, map[string]bool{}
	for _, b := range k.cases {
		exists[b.ID] = true
	}
	p := &plan.Plan{LoadBanks: []plan.LoadBank{}, Cases: []plan.Case{}, Interlocks: []plan.Interlock{}}
	shared := newLockTable()
	total := 0.0
	for _, b := range k.cases {
		b.Preconditions = append(k.depPreconditions(b, ids, exists), b.Preconditions...)
		for _, il := range b.locks {
			b.Interlocks = append(b.Interlocks, shared.id(il))
		}
		ids[b.ID] = true
		total += b.EstimatedS
		p.Cases = append(p.Cases, b.Case)
	}
	p.Interlocks = shared.list
	p.Sources = k.usedSources(p)
	for _, lb := range k.c.Site.LoadBanks {
		if k.banks[lb.ID] != nil {
			p.LoadBanks = append(p.LoadBanks, planBank(lb))
		}
	}
	p.Header = plan.Header{Format: plan.Format, Generated: plan.Generated,
		Tool: plan.Tool{Name: "contractc", Version: version.Version}, Site: k.c.Site.Name,
		Level: k.opt.Level, Module: k.opt.Module, Options: plan.Options{MaxHoldS: round(k.maxHold)},
		Inputs: plan.Inputs{Contracts: k.dg.contracts, Boundaries: k.dg.scoped(k.c, k.opt.Module), Files: k.dg.files,
			Schema: schema.Digest(), SchemaVersion: schema.Version},
		EstimatedS: tenths(total)}
	p.Coverage = k.coverage(p.Cases)
	k.commission(p)
	p.Boundaries = k.boundaries(p.Cases)
	return p
}

// depPreconditions turns a case's dependencies into case_passed
// preconditions when the plan holds them (ids: the cases before it), and
// into stated ones when the case they name is in another level's plan.
// A dependency at one of the plan's own levels that was not built (its
// clause is untestable) is dropped: the coverage table reports it.
func (k *compiler) depPreconditions(b *built, ids, exists map[string]bool) []plan.Precondition {
	var out []plan.Precondition
	for _, d := range b.deps {
		id := d.id()
		switch {
		case ids[id]:
			out = append(out, plan.Precondition{Kind: plan.PreCasePassed, Case: id, Text: "case " + id + " passed"})
		case exists[id] || k.opt.Level == plan.All || k.opt.Level == d.level:
			continue
		default:
			out = append(out, plan.Precondition{Kind: plan.PreState,
				Text: fmt.Sprintf("case %s passed (it is in the %s plan)", id, d.level)})
		}
	}
	return out
}

func levelRank(l string) int { return slices.Index([]string{plan.FAT, plan.SAT, plan.IST}, l) }

func kindRank(k string) int {
	return slices.Index([]string{plan.Steady, plan.Transient, plan.Failure, plan.Grid}, k)
}

func planBank(lb *contract.LoadBank) plan.LoadBank {
	kind := lb.Kind
	if kind == "" {
		kind = "resistive"
	}
	return plan.LoadBank{ID: lb.ID, Module: lb.Module.To, Kind: kind, RatingKW: round(lb.Rating.Canon),
		ResolutionKW: round(lb.Resolution.Canon), MaxRateKWPerS: round(lb.MaxRate.Canon)}
}

// round keeps 9 significant digits: plans stay readable, and a last-bit
// difference in floating point (fused multiply-add on some CPUs) cannot
// change a plan's bytes.
func round(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	e := math.Pow(10, 8-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*e) / e
}
