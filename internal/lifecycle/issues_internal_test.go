package lifecycle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

func check(side string, outcome grade.Outcome) results.Check {
	return results.Check{Verdict: grade.Verdict{Check: side + "-band", Kind: plan.InBand, Outcome: outcome}, Side: side, Channel: "p1/ma/feed-a/voltage"}
}

// Whose guarantee a failed case broke.
func TestOwnerOf(t *testing.T) {
	bd := &plan.Boundary{ID: "p1-ma", Supplier: plan.Party{Module: "p1", Party: "VoltSkid"}, Consumer: plan.Party{Module: "ma", Party: "GPUWorks"}}
	noVendor := &plan.Boundary{ID: "p1-ma", Supplier: plan.Party{Module: "p1"}, Consumer: plan.Party{Module: "ma"}}
	for _, c := range []struct {
		name        string
		checks      []results.Check
		bd          *plan.Boundary
		role, party string
	}{
		{"the guarantee failed", []results.Check{check(plan.Guarantee, grade.Fail), check(plan.Require, grade.Fail)}, bd, OwnerSupplier, "VoltSkid"},
		{"only the requirement failed", []results.Check{check(plan.Guarantee, grade.Pass), check(plan.Require, grade.Fail)}, bd, OwnerConsumer, "GPUWorks"},
		{"a module without a vendor", []results.Check{check(plan.Guarantee, grade.Fail)}, noVendor, OwnerSupplier, "the vendor of module p1"},
		{"a plan without parties", []results.Check{check(plan.Guarantee, grade.Fail)}, nil, OwnerSupplier, "the supplier of p1-ma"},
	} {
		role, party := ownerOf(results.Case{ID: "sat.p1-ma.steady.voltage-a", Boundary: "p1-ma", Checks: c.checks}, c.bd)
		assert.Equal(t, c.role, role, c.name)
		assert.Equal(t, c.party, party, c.name)
	}
}

// A case that could not be graded is the commissioning agent's, at the
// severity the site gives errors; a failed one its kind's, due by its
// severity; the contacts are the parties that signed.
func TestNewIssue(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	p := &plan.Plan{Boundaries: []plan.Boundary{{ID: "l1-ma", Supplier: plan.Party{Module: "l1", Party: "CoolFlow"}, Consumer: plan.Party{Module: "ma", Party: "GPUWorks"},
		Signatures: []plan.Signature{{Party: "CoolFlow", Status: "signed"}, {Party: "GPUWorks", Status: "stale"}}}}}
	rules := plan.DefaultCommissioning()
	rules.Severity["error"] = plan.Minor
	b := &CxBundle{Bundle: "b1", Manifest: "sha256:m", Rules: rules}
	errored := newIssue("ma-1", "ma", b, CxCase{Level: plan.L3, Record: 12}, results.Case{ID: "sat.l1-ma.steady.flow", Kind: plan.Steady, Boundary: "l1-ma",
		Outcome: grade.Error, Reason: "channel l1/ma/flow: no sample for 30 s"}, p, at)
	assert.Equal(t, Agent, errored.Owner)
	assert.Equal(t, OwnerAgent, errored.OwnerRole)
	assert.Equal(t, plan.Minor, errored.Severity)
	assert.Equal(t, at.Add(30*24*time.Hour), errored.Due)
	assert.Contains(t, errored.Description, "no sample for 30 s")
	assert.Equal(t, []string{"CoolFlow"}, errored.Contacts, "only a valid signature makes a contact")

	failed := newIssue("ma-2", "ma", b, CxCase{Level: plan.L4}, results.Case{ID: "ist.l1-ma.failure.pump", Kind: plan.Failure, Boundary: "l1-ma", Title: "pump trip",
		Outcome: grade.Fail, Checks: []results.Check{check(plan.Guarantee, grade.Fail)}}, p, at)
	assert.Equal(t, "CoolFlow", failed.Owner)
	assert.Equal(t, plan.Critical, failed.Severity, "failure behaviour above steady values")
	assert.Equal(t, at.Add(48*time.Hour), failed.Due)
	assert.Equal(t, "pump trip: guarantee-band (in_band, guarantee) on p1/ma/feed-a/voltage", failed.Description)
}

// The gate counts a failed case whose issue was waived, and refuses a
// level with no case.
func TestGateWaivedAndEmpty(t *testing.T) {
	l := &Log{byID: map[string]*Issue{}}
	rules := plan.DefaultCommissioning()
	l.Bundles = []*CxBundle{{Bundle: "b1", Module: "ma", Rules: rules, Cases: []CxCase{
		{ID: "a", Level: plan.L3, Outcome: "PASS"}, {ID: "b", Level: plan.L3, Outcome: "FAIL"}, {ID: "c", Level: plan.L3, Outcome: "SKIPPED"}}}}
	is := &Issue{ID: "ma-1", Module: "ma", Level: plan.L3, Case: "b", Severity: plan.Minor, Status: IssueWaived}
	l.Issues, l.byID["ma-1"] = []*Issue{is}, is
	g, err := l.Gate(plan.L3, "ma")
	assert.NoError(t, err)
	assert.Equal(t, 1, g.Passed)
	assert.Equal(t, 1, g.Waived)
	assert.Equal(t, []string{"1 case(s) neither passed nor waived: c (SKIPPED)"}, g.Missing)
	g, err = l.Gate(plan.L5, "ma")
	assert.NoError(t, err)
	assert.Equal(t, []string{"no case of level L5 (integrated) of module ma is recorded: run and record its plan"}, g.Missing)
	_, err = l.Gate("L7", "ma")
	assert.ErrorContains(t, err, `level "L7" is not one of the site's commissioning levels`)
	g, err = l.Gate(plan.L3, "mb")
	assert.NoError(t, err)
	assert.Contains(t, g.Missing[0], "no bundle of module mb is recorded")
}
