package compile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/plan"
)

// editExample copies the example with edits to one of its files.
func editExample(t *testing.T, file string, edits ...[2]string) string {
	t.Helper()
	dir := copyExample(t)
	path := filepath.Join(dir, file)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(b)
	for _, e := range edits {
		require.Contains(t, s, e[0])
		s = strings.ReplaceAll(s, e[0], e[1])
	}
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
	return dir
}

func gridCases(p *plan.Plan) map[string]plan.Case {
	out := map[string]plan.Case{}
	for _, c := range p.Cases {
		if c.Kind == plan.Grid {
			out[c.ID] = c
		}
	}
	return out
}

// TestGridCases: the example's grid boundary compiles into the job's
// start, stall and stop, steady training at every period of the sweep
// and the declared one, and a dip per point of the ride-through curve;
// the fleet drives every training case (its racks smooth their GPUs,
// which no load bank can), and the meter is sampled fast enough for the
// band's upper edge.
func TestGridCases(t *testing.T) {
	p, _, diags := compileDir(t, example, compile.Options{Level: plan.IST})
	require.Empty(t, diags)
	cases := gridCases(p)
	require.Len(t, cases, 1+13+3)
	job := cases["ist.u1-site.grid.job"]
	require.Equal(t, `boundaries."u1-site".grid.require.ramp`, job.Clause.Path)
	var train plan.Step
	for _, s := range job.Steps {
		if s.Op == plan.OpTrain {
			train = s
		}
	}
	require.Equal(t, plan.DriverFleet, train.Driver)
	require.Equal(t, 1.0, train.PeriodS)
	require.Equal(t, 70.0, train.DutyPct)
	require.Equal(t, 20.0, train.StallS)
	require.Contains(t, train.Note, "lb-ma cannot switch at 1 Hz (its switching limit: 0.5 Hz)")
	kinds := map[string]float64{}
	for _, k := range job.Checks {
		kinds[k.ID] = *k.Max
		require.Equal(t, "u1/site/power", k.Channel)
		require.Equal(t, "kW", k.Unit)
	}
	// 1 MW/s over 1 s, 5 MW/min over a minute, 20 % of 6.5 MW
	require.Equal(t, map[string]float64{"ramp-up-1s": 1000, "ramp-down-1s": 1000, "ramp-up-1min": 5000, "ramp-down-1min": 5000, "swing": 1300}, kinds)
	require.Equal(t, []plan.Sampling{{Channel: "u1/site/power", MaxPeriodS: 0.02, Reason: "the band's upper edge 20 Hz needs 50 samples per second (2.5 × f2)"}}, job.Sampling)

	slow := cases["ist.u1-site.grid.oscillation-10000ms"]
	require.Equal(t, plan.DriverFleet, slow.Steps[1].Driver)
	require.Contains(t, slow.Steps[1].Note, "answers the grid in the rack (site.modules.ma.grid_response)")

	osc := cases["ist.u1-site.grid.oscillation-300ms"]
	var line plan.Check
	for _, k := range osc.Checks {
		if k.Kind == plan.GridLine {
			line = k
		}
	}
	require.Equal(t, 65.0, *line.Max, "1 % of 6.5 MW")
	require.Equal(t, []string{"record"}, line.Steps)
	require.Equal(t, 0.1, line.BandLowHz)
	require.Equal(t, 20.0, line.BandHighHz)

	dip := cases["ist.u1-site.grid.voltage-dip-2"]
	var d plan.Step
	for _, s := range dip.Steps {
		if s.Op == plan.OpGridDip {
			d = s
		}
	}
	require.Equal(t, "u1", d.Target)
	require.Equal(t, 0.5, *d.VoltagePU)
	require.Equal(t, 0.3, d.DurationS)
	require.Equal(t, plan.RestoresWithin, dip.Checks[0].Kind)
	require.Equal(t, 90.0, dip.Checks[0].SharePct)
	require.Equal(t, 1.0, dip.Checks[0].WithinS)

	cov := map[string]plan.Coverage{}
	for _, c := range p.Coverage {
		cov[c.Clause] = c
	}
	require.Equal(t, plan.Full, cov[`boundaries."u1-site".grid.require.swing`].Status, "the swing is graded by the job and the oscillation cases")
	require.Equal(t, plan.Untestable, cov[`boundaries."u1-site".grid.require.frequency_ride_through`].Status)
}

// TestGridDrivers: without smoothing in the GPUs, load banks that can
// switch fast enough drive the training pattern, unsmoothed, and the
// fleet the periods they cannot switch.
func TestGridDrivers(t *testing.T) {
	// a utility that allows what the unsmoothed site does
	dir := editExample(t, "grid.cue", [2]string{"site: modules: (c.it): grid_response: smoothing: _smoothing", ""},
		[2]string{`"1 MW/s"`, `"10 MW/s"`}, [2]string{`"5 MW/min"`, `"50 MW/min"`}, [2]string{`swing: {max: "20 %"`, `swing: {max: "90 %"`},
		[2]string{`line: "1 %", rms: "1 %"`, `line: "40 %", rms: "40 %"`})
	b, err := os.ReadFile(filepath.Join(dir, "site.cue"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "site.cue"), []byte(strings.Replace(string(b), `switching: "0.5 Hz"`, `switching: "2 Hz"`, 1)), 0o644))
	p, _, diags := compileDir(t, dir, compile.Options{Level: plan.IST})
	require.Empty(t, diags)
	drivers := map[string]string{}
	for id, c := range gridCases(p) {
		for _, s := range c.Steps {
			if s.Op == plan.OpTrain {
				drivers[id] = s.Driver
				if s.Driver == plan.DriverLoadBanks {
					require.NotNil(t, s.LowKW)
					require.Greater(t, *s.HighKW, *s.LowKW)
				} else {
					require.Contains(t, s.Note, "cannot switch at")
				}
			}
		}
	}
	require.Equal(t, plan.DriverFleet, drivers["ist.u1-site.grid.oscillation-300ms"], "0.3 s is faster than 2 Hz")
	require.Equal(t, plan.DriverLoadBanks, drivers["ist.u1-site.grid.oscillation-568ms"])
	require.Equal(t, plan.DriverLoadBanks, drivers["ist.u1-site.grid.oscillation-10000ms"])
}

// TestGridWithoutMeter: grid clauses no meter measures are untestable,
// said at the grid section, with the channel to declare.
func TestGridWithoutMeter(t *testing.T) {
	dir := editExample(t, "grid.cue", [2]string{`channel: "u1/site/power"`, ""})
	_, _, diags := compileDir(t, dir, compile.Options{Level: plan.IST})
	var paths []string
	for _, d := range diags {
		require.Equal(t, compile.RuleNoChannel, d.Rule)
		require.Contains(t, d.Message, "the grid section names no meter channel")
		paths = append(paths, d.Path)
	}
	require.ElementsMatch(t, []string{`boundaries."u1-site".grid.require.ramp`, `boundaries."u1-site".grid.require.swing`,
		`boundaries."u1-site".grid.require.oscillation`, `boundaries."u1-site".grid.require.voltage_ride_through`}, paths)
}
