package compile_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"cuelang.org/go/cue"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/canon"
	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/sitegen"
)

// TestOneToleranceChangesExactlyItsChecks changes one tolerance of the
// example, compiles both versions and diffs the plans: exactly the
// checks and interlocks whose sources name that tolerance change, and
// besides them only the digests of the boundaries it sits in.
func TestOneToleranceChangesExactlyItsChecks(t *testing.T) {
	for _, tc := range []struct {
		name, file, old, new, field string
		checks, interlocks          int // how many must change
	}{
		{"supplier's voltage tolerance", "power.cue",
			`"voltage-a": {channel: "\(c.power)/\(c.it)/feed-a/voltage", guarantee: {nominal: "415 V", tolerance: "3 %"}}`,
			`"voltage-a": {channel: "\(c.power)/\(c.it)/feed-a/voltage", guarantee: {nominal: "415 V", tolerance: "2 %"}}`,
			`steady."voltage-a".guarantee.tolerance`, 3 * 4, 0},
		{"consumer's voltage tolerance", "it.cue",
			`"voltage-a": require: {nominal: "415 V", tolerance: "5 %"}`,
			`"voltage-a": require: {nominal: "415 V", tolerance: "6 %"}`,
			`steady."voltage-a".require.tolerance`, 3 * 2, 0},
		{"consumer's feed-b tolerance", "it.cue",
			`"voltage-b": require: {nominal: "415 V", tolerance: "5 %"}`,
			`"voltage-b": require: {nominal: "415 V", tolerance: "6 %"}`,
			`steady."voltage-b".require.tolerance`, 3 * 1, 3 * 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _, _ := compileDir(t, example, compile.Options{})
			dir := copyExample(t)
			edit(t, dir, tc.file, tc.old, tc.new)
			after, _, diags := compileDir(t, dir, compile.Options{})
			require.Empty(t, diags)
			touched := func(sources []string) bool {
				return slices.ContainsFunc(sources, func(s string) bool { return strings.HasSuffix(s, tc.field) })
			}
			changedBoundaries := map[string]bool{}
			for id := range before.Header.Inputs.Boundaries {
				if before.Header.Inputs.Boundaries[id] != after.Header.Inputs.Boundaries[id] {
					changedBoundaries[id] = true
				}
			}
			require.Equal(t, map[string]bool{"p1-ma": true, "p2-mb": true, "p3-mc": true}, changedBoundaries)
			require.NotEqual(t, before.Header.Inputs.Contracts, after.Header.Inputs.Contracts)

			require.Len(t, after.Cases, len(before.Cases))
			changed := 0
			for i, b := range before.Cases {
				a := after.Cases[i]
				require.Equal(t, b.ID, a.ID)
				require.Len(t, a.Checks, len(b.Checks), b.ID)
				for j, bc := range b.Checks {
					ac := a.Checks[j]
					if touched(bc.Sources) {
						require.NotEqual(t, js(bc), js(ac), "%s/%s uses the tolerance but did not change", b.ID, bc.ID)
						changed++
					} else {
						require.Equal(t, js(bc), js(ac), "%s/%s does not use the tolerance but changed", b.ID, bc.ID)
					}
				}
				// nothing else in the case changes but the boundary digest
				a.Checks, b.Checks = nil, nil
				a.Clause.BoundaryDigest, b.Clause.BoundaryDigest = "", ""
				require.Equal(t, js(b), js(a), b.ID)
			}
			require.Equal(t, tc.checks, changed)

			require.Len(t, after.Interlocks, len(before.Interlocks))
			changed = 0
			for i, b := range before.Interlocks {
				a := after.Interlocks[i]
				require.Equal(t, b.ID, a.ID)
				if touched(b.Sources) {
					require.NotEqual(t, js(b), js(a), b.ID)
					changed++
				} else {
					require.Equal(t, js(b), js(a), b.ID)
				}
			}
			require.Equal(t, tc.interlocks, changed)
			require.Equal(t, js(before.Coverage), js(after.Coverage))
			require.Equal(t, before.Header.EstimatedS, after.Header.EstimatedS)
		})
	}
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestUntestableClausesAreDiagnosed: a clause no case can prove is an
// error at its file and line and an untestable coverage entry, never a
// silent omission; the rest of the plan is still written.
func TestUntestableClausesAreDiagnosed(t *testing.T) {
	for _, tc := range []struct {
		name, file, old, new string
		rule, at, clause     string
		level                string
	}{
		{"swing larger than the load bank", "site.cue",
			`rating:     "2.5 MW"`, `rating:     "1.2 MW"`,
			compile.RuleNoLoad, "it.cue:17:", `boundaries."p1-ma".transient."training-voltage"`, plan.SAT},
		{"failure load larger than the load bank", "it.cue",
			`channel: "\(c.power)/\(c.it)/feed-b/voltage"
					load:    "100 %"`, `channel: "\(c.power)/\(c.it)/feed-b/voltage"
					load:    "130 %"`,
			compile.RuleNoLoad, "it.cue:31:", `boundaries."p1-ma".failure."feed-a-loss"`, plan.IST},
		{"load bank too slow for the square wave", "site.cue",
			`max_rate:   "50 MW/s"`, `max_rate:   "500 kW/s"`,
			compile.RuleNoLoad, "it.cue:17:", `boundaries."p1-ma".transient."training-voltage"`, plan.SAT},
		{"no load bank at the consumer", "site.cue",
			`	loadbanks: {
		for c in _cells {`, `	loadbanks: {
		for c in _cells if c.it != "ma" {`,
			compile.RuleNoLoad, "it.cue:17:", `boundaries."p1-ma".transient."training-voltage"`, plan.SAT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyExample(t)
			edit(t, dir, tc.file, tc.old, tc.new)
			_, d, err := contract.Vet(dir)
			require.NoError(t, err)
			require.Zero(t, d.Count(diag.Error), "the edit must leave the contracts valid: %v", d)
			p, _, diags := compileDir(t, dir, compile.Options{})
			var hit *diag.Diagnostic
			for i, dg := range diags {
				if dg.Rule == tc.rule && dg.Path == tc.clause && strings.Contains(dg.Message, strings.ToUpper(tc.level)) {
					hit = &diags[i]
				}
			}
			require.NotNil(t, hit, "want %s on %s at %s, got %v", tc.rule, tc.clause, tc.level, diags)
			require.Equal(t, diag.Error, hit.Severity)
			require.True(t, strings.HasPrefix(hit.Pos.Resolved().String(), tc.at), "at %s, want %s", hit.Pos.Resolved(), tc.at)
			require.NotEmpty(t, hit.Hint)
			for _, cov := range p.Coverage {
				if cov.Clause == tc.clause {
					require.NotContains(t, strings.Join(cov.Cases, " "), tc.level+".", "no %s case can prove it", tc.level)
					require.Contains(t, strings.Join(cov.Reasons, "\n"), tc.level+": ")
					return
				}
			}
			t.Fatalf("%s is missing from the coverage", tc.clause)
		})
	}
}

// TestClauseWithoutChannelOrNumbers: an alarm delay with no alarm
// channel to time (PLAN001) and a clause that states no numbers
// (PLAN003) are errors at the clause.
func TestClauseWithoutChannelOrNumbers(t *testing.T) {
	dir := copyExample(t)
	edit(t, dir, "controls.cue", `guarantee: {alarm: "ctl/\(c.it)/alarm/controller-silent", alarm_within: "3 s"}`, `guarantee: {alarm_within: "3 s"}`)
	edit(t, dir, "it.cue", `require: {alarm: "ctl/\(c.it)/alarm/controller-silent", alarm_within: "10 s"}`, `require: {alarm_within: "10 s"}`)
	edit(t, dir, "joints.cue", `medium:   "liquid"`, `medium:   "liquid"
			steady: dp: channel: "\(c.cooling)/\(c.it)/dp"`)
	_, d, err := contract.Vet(dir)
	require.NoError(t, err)
	require.Zero(t, d.Count(diag.Error), "%v", d)
	p, _, diags := compileDir(t, dir, compile.Options{})
	rules := map[string]string{}
	for _, dg := range diags {
		rules[dg.Path] += dg.Rule + "@" + dg.Pos.Resolved().String() + " "
	}
	require.Contains(t, rules[`boundaries."ctl-ma".failure."controller-silent"`], "PLAN001@controls.cue:9:")
	require.Contains(t, rules[`boundaries."l1-ma".steady.dp`], "PLAN003@joints.cue:")
	require.Equal(t, plan.Untestable, coverageOf(t, p, `boundaries."ctl-ma".failure."controller-silent"`).Status)
	require.Equal(t, plan.Untestable, coverageOf(t, p, `boundaries."l1-ma".steady.dp`).Status)
}

// TestUntestableAloneIsStatusUntestable: a clause that no level can
// prove is reported untestable, with no cases.
func TestUntestableAloneIsStatusUntestable(t *testing.T) {
	dir := copyExample(t)
	edit(t, dir, "site.cue", `max_rate:   "50 MW/s"`, `max_rate:   "500 kW/s"`)
	p, _, diags := compileDir(t, dir, compile.Options{Level: plan.SAT})
	require.NotEmpty(t, diags)
	found := 0
	for _, cov := range p.Coverage {
		if strings.Contains(cov.Clause, `transient."training-voltage"`) {
			require.Equal(t, plan.Untestable, cov.Status)
			require.Empty(t, cov.Cases)
			found++
		}
	}
	require.Equal(t, 3, found)
}

// TestSlowLoadBankIsPartial: edges faster than the load bank can ramp
// run at the bank's rate, and the clause is marked partial with why.
func TestSlowLoadBankIsPartial(t *testing.T) {
	dir := copyExample(t)
	edit(t, dir, "site.cue", `max_rate:   "50 MW/s"`, `max_rate:   "10 MW/s"`)
	p, _, diags := compileDir(t, dir, compile.Options{Level: plan.SAT, Module: "ma"})
	require.Empty(t, diags)
	c := caseNamed(t, p, "sat.p1-ma.transient.training-frequency")
	require.Equal(t, 10000.0, stepNamed(c, "step-up").RateKWPerS)
	cov := coverageOf(t, p, `boundaries."p1-ma".transient."training-frequency"`)
	require.Equal(t, plan.Partial, cov.Status)
	require.Contains(t, strings.Join(cov.Reasons, "\n"), "faster than lb-ma's fastest ramp 10 MW/s")
}

func caseNamed(t *testing.T, p *plan.Plan, id string) plan.Case {
	t.Helper()
	for _, c := range p.Cases {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no case %s", id)
	return plan.Case{}
}

func coverageOf(t *testing.T, p *plan.Plan, clause string) plan.Coverage {
	t.Helper()
	for _, c := range p.Coverage {
		if c.Clause == clause {
			return c
		}
	}
	t.Fatalf("no coverage of %s", clause)
	return plan.Coverage{}
}

// TestPartialReasonsOfTheExample: the example's electrical voltage
// clauses are partial (resistive load bank, PF 0.95), the ITIC mask is
// not graded, interruptions are graded on RMS; frequency is full.
func TestPartialReasonsOfTheExample(t *testing.T) {
	p, _, _ := compileDir(t, example, compile.Options{})
	reasons := func(clause string) string {
		return strings.Join(coverageOf(t, p, clause).Reasons, "\n")
	}
	require.Contains(t, reasons(`boundaries."p1-ma".steady."voltage-a"`), "resistive (power factor 1) but the load it stands in for runs at power factor 0.95")
	require.Contains(t, reasons(`boundaries."p1-ma".transient."training-voltage"`), "ITIC mask is not graded")
	require.Contains(t, reasons(`boundaries."p1-ma".failure."feed-a-loss"`), "RMS samples")
	require.Equal(t, plan.Full, coverageOf(t, p, `boundaries."p1-ma".steady.frequency`).Status)
	require.Equal(t, plan.Full, coverageOf(t, p, `boundaries."l1-ma".transient."training-heat"`).Status)
}

// TestMaxHold caps soak holds and square-wave runs, records the cap in
// the header, and marks what it shortened partial; recovery windows
// are not shortened.
func TestMaxHold(t *testing.T) {
	p, _, _ := compileDir(t, example, compile.Options{Level: plan.SAT, MaxHold: 30 * time.Second})
	full, _, _ := compileDir(t, example, compile.Options{Level: plan.SAT})
	require.Equal(t, 30.0, p.Header.Options.MaxHoldS)
	require.Less(t, p.Header.EstimatedS, full.Header.EstimatedS/5)
	heat := caseNamed(t, p, "sat.l1-ma.transient.training-heat")
	require.Equal(t, 1, stepNamed(heat, "excite").Cycles, "a 60 s period fits once in 30 s")
	require.GreaterOrEqual(t, stepNamed(heat, "after").DurationS, 120.0, "the 120 s recovery must still be observable")
	for _, s := range caseNamed(t, p, "sat.p1-ma.steady.voltage-a").Steps {
		if s.Op == plan.OpHold {
			require.LessOrEqual(t, s.DurationS, 30.0, s.ID)
		}
	}
	require.Contains(t, strings.Join(coverageOf(t, p, `boundaries."p1-ma".steady.frequency`).Reasons, "\n"), "capped at 30 s by --max-hold")
	require.Contains(t, strings.Join(coverageOf(t, p, `boundaries."l1-ma".transient."training-heat"`).Reasons, "\n"), "shortened from 10 to 1 cycles")
	ist, _, _ := compileDir(t, example, compile.Options{Level: plan.IST, MaxHold: 30 * time.Second})
	require.Contains(t, strings.Join(coverageOf(t, ist, `boundaries."p1-ma".failure."ups-on-battery"`).Reasons, "\n"), "ride-through of 5 min is observed for only 30 s")
}

// TestModuleFilter: FAT of a supplier holds only its cases; SAT of a
// consumer every joint it is part of; an unknown module is an error.
func TestModuleFilter(t *testing.T) {
	p, _, _ := compileDir(t, example, compile.Options{Level: plan.FAT, Module: "p1"})
	require.NotEmpty(t, p.Cases)
	for _, c := range p.Cases {
		require.Equal(t, "p1", c.Module)
		require.Equal(t, "p1-ma", c.Boundary)
	}
	require.Equal(t, []string{"p1-ma"}, keys(p.Header.Inputs.Boundaries))
	p, _, _ = compileDir(t, example, compile.Options{Level: plan.SAT, Module: "ma"})
	var bs []string
	for _, c := range p.Cases {
		if !slices.Contains(bs, c.Boundary) {
			bs = append(bs, c.Boundary)
		}
	}
	slices.Sort(bs)
	require.Equal(t, []string{"ctl-ma", "l1-ma", "p1-ma"}, bs)
	// FAT of a consumer: nothing to prove, and the coverage says where
	p, _, _ = compileDir(t, example, compile.Options{Level: plan.FAT, Module: "ma"})
	require.Empty(t, p.Cases)
	require.NotEmpty(t, p.Coverage)
	for _, c := range p.Coverage {
		require.Equal(t, plan.NotAtLevel, c.Status)
		require.Contains(t, c.Reasons[0], "FAT proves the supplier's side")
	}
	_, _, err := compile.Dir(example, compile.Options{Level: plan.SAT, Module: "zz"})
	require.ErrorContains(t, err, `no module "zz" in site threemodule`)
	_, _, err = compile.Dir(example, compile.Options{Level: "fit"})
	require.ErrorContains(t, err, `unknown level "fit"`)
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestRefusesContractsWithErrors: contracts that do not vet are not
// compiled; the errors come back as diagnostics.
func TestRefusesContractsWithErrors(t *testing.T) {
	dir := copyExample(t)
	edit(t, dir, "power.cue", `guarantee: {nominal: "415 V", tolerance: "3 %"}}
				"voltage-b"`, `guarantee: {nominal: "415 V", tolerance: "3"}}
				"voltage-b"`)
	p, diags, err := compile.Dir(dir, compile.Options{Level: plan.All})
	require.NoError(t, err)
	require.Nil(t, p)
	require.NotEmpty(t, diags)
	require.Equal(t, "UNIT001", diags[0].Rule)
}

// TestDigestsMatchCanon: the plan's digests are internal/canon's, over
// {site, boundaries} and over each boundary.
func TestDigestsMatchCanon(t *testing.T) {
	c, _, err := contract.Vet(example)
	require.NoError(t, err)
	p, _, err := compile.Compile(c, compile.Options{Level: plan.SAT})
	require.NoError(t, err)
	v := c.Loaded.Value
	whole := c.Loaded.Ctx.CompileString("{}").
		FillPath(cue.ParsePath("site"), v.LookupPath(cue.ParsePath("site"))).
		FillPath(cue.ParsePath("boundaries"), v.LookupPath(cue.ParsePath("boundaries")))
	want, err := canon.Digest(whole)
	require.NoError(t, err)
	require.Equal(t, want, p.Header.Inputs.Contracts)
	for _, b := range c.Boundaries {
		d, err := canon.Digest(v.LookupPath(cue.MakePath(cue.Str("boundaries"), cue.Str(b.ID))))
		require.NoError(t, err)
		require.Equal(t, d, p.Header.Inputs.Boundaries[b.ID], b.ID)
	}
	for _, cs := range p.Cases {
		require.Equal(t, p.Header.Inputs.Boundaries[cs.Boundary], cs.Clause.BoundaryDigest, cs.ID)
	}
}

// TestEveryNumberIsSigned: every check and interlock names contract
// values, each with a position in a contract file and its text.
func TestEveryNumberIsSigned(t *testing.T) {
	p, _, _ := compileDir(t, example, compile.Options{})
	for _, c := range p.Cases {
		for _, k := range c.Checks {
			require.NotEmpty(t, k.Sources, "%s/%s", c.ID, k.ID)
			for _, s := range k.Sources {
				src := p.Sources[s]
				require.Regexp(t, `^[a-z]+\.cue:\d+:\d+$`, src.Pos, s)
				require.NotEmpty(t, src.Value, s)
			}
		}
	}
	// a spot check of one number against the contract text
	c := caseNamed(t, p, "sat.p1-ma.steady.voltage-a")
	var k plan.Check
	for _, x := range c.Checks {
		if x.Side == plan.Guarantee {
			k = x
		}
	}
	require.Equal(t, 402.55, *k.Min)
	require.Equal(t, 427.45, *k.Max)
	require.Equal(t, "V", k.Unit)
	require.Equal(t, "3 %", p.Sources[fmt.Sprintf("%s.guarantee.tolerance", c.Clause.Path)].Value)
}

// A generated multi-module site compiles at every level into a plan a
// reader accepts (compileDir decodes it against the schema).
func TestGeneratedSiteCompilesToAReadablePlan(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, sitegen.Write(dir, 3))
	p, _, diags := compileDir(t, dir, compile.Options{Level: plan.All})
	require.Zero(t, diags.Count(diag.Error), "%v", diags)
	require.NotEmpty(t, p.Cases)
	levels := map[string]int{}
	for _, c := range p.Cases {
		levels[string(c.Level)]++
	}
	require.Len(t, levels, 3, "cases at fat, sat and ist: %v", levels)
}
