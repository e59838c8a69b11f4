package compile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/plan"
)

// Every case carries the site's commissioning level, and the plan the
// rules: by default FAT L1, SAT steady L3, SAT transient L4, IST and
// grid L5.
func TestCasesCarryTheirCommissioningLevel(t *testing.T) {
	p, _, _ := compileDir(t, example, compile.Options{})
	require.Equal(t, plan.DefaultCommissioning(), p.Commissioning)
	want := map[string]string{plan.FAT: plan.L1, "sat.steady": plan.L3, "sat.transient": plan.L4, plan.IST: plan.L5}
	seen := map[string]bool{}
	for _, c := range p.Cases {
		key := c.Level
		if c.Level == plan.SAT {
			key += "." + c.Kind
		}
		require.Equal(t, want[key], c.Commissioning, c.ID)
		seen[key] = true
	}
	require.Len(t, seen, len(want), "the example has cases of every default mapping")
}

// A site's commissioning section changes the levels its cases take
// and the rules the plan carries.
func TestSiteCommissioningReachesThePlan(t *testing.T) {
	dir := copyExample(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "commissioning.cue"), []byte(`package site

site: commissioning: {
	levels: L4: {name: "transient", colour: "#b45309"}
	map: {"sat.transient": "L3", ist: "L4", "ist.grid": "L5"}
	severity: steady: "major"
	commissioned: ["L3"]
}
`), 0o644))
	p, _, _ := compileDir(t, dir, compile.Options{})
	lvl, ok := p.Commissioning.Level(plan.L4)
	require.True(t, ok)
	require.Equal(t, plan.CxLevel{ID: plan.L4, Name: "transient", Colour: "#b45309"}, lvl)
	require.Equal(t, plan.Major, p.Commissioning.SeverityOf(plan.Steady))
	require.Equal(t, []string{plan.L3}, p.Commissioning.Commissioned)
	n := map[string]int{}
	for _, c := range p.Cases {
		n[c.Commissioning]++
		switch {
		case c.Level == plan.SAT:
			require.Equal(t, plan.L3, c.Commissioning, c.ID)
		case c.Kind == plan.Grid:
			require.Equal(t, plan.L5, c.Commissioning, "%s: a level and kind wins over the level", c.ID)
		case c.Level == plan.IST:
			require.Equal(t, plan.L4, c.Commissioning, "%s: the whole level's entry, as ist.failure is not stated", c.ID)
		}
	}
	require.Positive(t, n[plan.L4])
	require.Positive(t, n[plan.L5])
}

// The plan records each boundary its cases test: supplier and consumer
// with their vendors, and every party of the boundary's list, in its
// order, with the signature the options give (missing otherwise). A
// grid boundary's consumer is the site, which names no vendor.
func TestPlanRecordsTheBoundariesAndTheirSignatures(t *testing.T) {
	signed := plan.Signature{Party: "VoltSkid", Status: "signed", Key: "SHA256:k", SignedAt: "2026-03-01T10:00:00Z"}
	stale := plan.Signature{Party: "ExamplePowerLight", Status: "stale", Key: "SHA256:g", SignedAt: "2025-03-01T10:00:00Z"}
	p, _, _ := compileDir(t, example, compile.Options{Signatures: map[string][]plan.Signature{
		"p1-ma": {signed}, "u1-site": {stale}, "p9-none": {{Party: "Nobody", Status: "signed"}}}})
	var ids []string
	for _, b := range p.Boundaries {
		ids = append(ids, b.ID)
	}
	require.Equal(t, []string{"ctl-ma", "ctl-mb", "ctl-mc", "l1-ma", "l2-mb", "l3-mc", "p1-ma", "p2-mb", "p3-mc", "u1-site"}, ids)
	require.Equal(t, plan.Boundary{ID: "p1-ma",
		Supplier: plan.Party{Module: "p1", Party: "VoltSkid"}, Consumer: plan.Party{Module: "ma", Party: "GPUWorks"},
		Signatures: []plan.Signature{signed, {Party: "GPUWorks", Status: "missing"}}}, *p.BoundaryOf("p1-ma"))
	require.Equal(t, plan.Boundary{ID: "u1-site",
		Supplier: plan.Party{Module: "u1", Party: "ExamplePowerLight"}, Consumer: plan.Party{Module: "threemodule"},
		Signatures: []plan.Signature{stale, {Party: "SiteOps", Status: "missing"}}}, *p.BoundaryOf("u1-site"))
	require.Equal(t, []plan.Signature{{Party: "CoolFlow", Status: "missing"}, {Party: "GPUWorks", Status: "missing"}},
		p.BoundaryOf("l2-mb").Signatures)

	// a plan of one module records only the boundaries it tests
	p, _, _ = compileDir(t, example, compile.Options{Level: plan.SAT, Module: "ma"})
	ids = nil
	for _, b := range p.Boundaries {
		ids = append(ids, b.ID)
	}
	require.Equal(t, []string{"ctl-ma", "l1-ma", "p1-ma"}, ids)
}
