package burnin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// facility opens the example's simulated site with a simulator defect
// ("" none), serves its devices on loopback and returns the module-wide
// step over them: the probe reads the PDUs, feeds and CDUs through the
// binding the simulator describes (Modbus and SNMP), the training load
// is module ma's 288 nodes in the fleet's training wave, site time
// moves only when the step waits.
func facility(t *testing.T, defect string) (*Facility, *site) {
	t.Helper()
	s := openSiteWith(t, defect, "ma")
	o := s.o
	names := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		names[i] = n.Name
	}
	require.NoError(t, o.Start())
	t.Cleanup(o.Close)
	secrets := sim.SecretsFrom(func(string) (string, bool) { return "", false })
	lookup := func(k string) (string, bool) {
		return map[string]string{sim.EnvCommunity: secrets.Community, sim.EnvAuth: secrets.AuthPass, sim.EnvPriv: secrets.PrivPass}[k], true
	}
	ps, err := probe.OpenSite(o.Binding(o.ProfileDirs, o.Paths.Contracts, sim.EnvRefs), probe.Options{LookupEnv: lookup})
	require.NoError(t, err)
	t.Cleanup(func() { ps.Close() })
	p, err := plan.Read(exampleDir + "/plans/sat.json")
	require.NoError(t, err)
	_, err = o.SetNodes(sim.NodeRequest{Nodes: names, State: fleet.Idle})
	require.NoError(t, err)
	o.Site.Advance(30 * time.Second)
	return &Facility{Plan: p, Module: "ma", Read: ChannelReader(ps),
		Train: func(_ context.Context, on bool) (time.Time, error) {
			st := fleet.Idle
			if on {
				st = fleet.Training
			}
			_, err := o.SetNodes(sim.NodeRequest{Nodes: names, State: st})
			return o.Site.Now(), err
		},
		Wait: func(_ context.Context, d time.Duration) (time.Time, error) {
			o.Site.Advance(d)
			return o.Site.Now(), nil
		},
	}, s
}

func TestFacilityUnderTrainingLoad(t *testing.T) {
	f, _ := facility(t, "")
	res, err := f.Grade(context.Background())
	require.NoError(t, err)
	t.Log(res)
	require.NotEmpty(t, res.Cases)
	assert.True(t, res.Passed, strings.Join(res.Failures(), "\n"))
	for _, c := range res.Cases {
		for _, v := range c.Verdicts {
			assert.Greater(t, v.Samples, 10, "%s %s graded from samples", c.ID, v.Check)
			if v.Check == "guarantee-max-deviation" {
				require.NotNil(t, v.Measured)
				assert.Greater(t, *v.Measured, 1.0, "the nodes' training wave moves the feed's voltage: %s", v.Detail)
			}
		}
	}

	f, _ = facility(t, "p1-slow-recovery")
	res, err = f.Grade(context.Background())
	require.NoError(t, err)
	t.Log(res)
	assert.False(t, res.Passed, "a feed that recovers too slowly under the synchronous load fails the step")
	fails := strings.Join(res.Failures(), "\n")
	assert.Contains(t, fails, `boundaries."p1-ma".transient."training-voltage"`)
	assert.Contains(t, fails, "recovery-time FAIL")
	for _, c := range res.Cases {
		if !strings.Contains(c.ID, "training-voltage") {
			assert.Equal(t, grade.Pass, c.Outcome, "%s is not what the defect touches", c.ID)
		}
	}
	assert.Equal(t, 4, len(res.Cases)+len(res.Skipped), "module ma's three transient clauses, each graded or listed as skipped, and the grid boundary the SAT plan leaves out: %v", res.Skipped)
	assert.Contains(t, strings.Join(res.Skipped, "\n"), "sat.l1-ma.transient.training-heat: excited at a period of 60 s")
	assert.Contains(t, strings.Join(res.Skipped, "\n"), "the grid boundary: the plan has no grid case (compile --level all or ist")
}

// TestFacilityGradesTheGrid: with a plan that holds the grid cases, the
// module-wide step grades the site's power at the point of
// interconnection against the utility's limits too, the meter read as
// fast as the band needs. Module ma's training square wave, unsmoothed
// (the burn-in's load), swings the site by about 1.5 MW every 4 s: its
// line at 0.25 Hz and its ramps break the utility's limits, while the
// joints' transient clauses hold.
func TestFacilityGradesTheGrid(t *testing.T) {
	f, _ := facility(t, "")
	p, err := plan.Read(exampleDir + "/plans/all.json")
	require.NoError(t, err)
	f.Plan = p
	res, err := f.Grade(context.Background())
	require.NoError(t, err)
	var grid *FacilityCase
	for i, c := range res.Cases {
		if c.ID == "u1-site at the point of interconnection" {
			grid = &res.Cases[i]
		} else {
			assert.Equal(t, grade.Pass, c.Outcome, "%s: %v", c.ID, c.Verdicts)
		}
	}
	require.NotNil(t, grid, "%v", res.Cases)
	assert.Equal(t, `boundaries."u1-site".grid.require (grid.cue:30:22)`, grid.Clause)
	assert.False(t, res.Passed)
	byCheck := map[string]grade.Verdict{}
	for _, v := range grid.Verdicts {
		byCheck[v.Check] = v
		assert.Greater(t, v.Samples, 5000, "%s: the meter read at 50 samples/s for two minutes", v.Check)
	}
	for _, v := range grid.Verdicts {
		t.Log(v.Check, v.Outcome, v.Detail)
	}
	line := byCheck["line"]
	require.Equal(t, grade.Fail, line.Outcome, line.Detail)
	assert.Contains(t, line.Detail, "at 0.25 Hz")
	assert.Greater(t, *line.Measured, 500.0)
	assert.Equal(t, grade.Fail, byCheck["ramp-up-1s"].Outcome, byCheck["ramp-up-1s"].Detail)
}

// The ladder with the module-wide step: 288 healthy nodes all pass, but
// the feed's slow recovery under their synchronous load fails the
// burn-in with the clause named, and the bundle says so.
func TestBurninFailsOnTheFacility(t *testing.T) {
	f, s := facility(t, "p1-slow-recovery")
	res, err := Run(context.Background(), s.nodes, s.tools(), Config{Load: s.load, Facility: f})
	require.NoError(t, err)
	assert.Empty(t, res.Held(), reasons(res))
	require.NotNil(t, res.Facility)
	assert.False(t, res.Passed())
	assert.Contains(t, res.Facility.String(), `boundaries."p1-ma".transient."training-voltage" (it.cue:16:15)`)
	dir := t.TempDir() + "/b"
	m, _, err := WriteBundle(dir, res, BundleOptions{Tool: "test"})
	require.NoError(t, err)
	assert.Equal(t, "failed", m.Outcome)
	rep, err := evidence.Verify(dir, nil)
	require.NoError(t, err)
	assert.Empty(t, rep.Problems)
}
