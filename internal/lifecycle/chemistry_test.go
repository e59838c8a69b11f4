package lifecycle_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/lifecycle"
)

func num(v float64) *float64 { return &v }

// withChemist lets operator record water chemistry: ops (admin) adds a
// role "lab" that may, and gives it to operator.
func withChemist(t *testing.T, s *lifecycle.Store) {
	t.Helper()
	ctx := context.Background()
	cur, _, err := s.Policy(ctx)
	require.NoError(t, err)
	p, err := lifecycle.ParsePolicy(cur.Marshal()) // a copy: the store's stays as it is
	require.NoError(t, err)
	p.Roles["lab"] = lifecycle.Role{May: []string{lifecycle.MayChemistry}}
	m := p.Members["ssh:operator"]
	m.Roles = append(m.Roles, "lab")
	p.Members["ssh:operator"] = m
	_, err = s.SetPolicy(ctx, as(t, "ops"), p, "the operator records the lab's water chemistry")
	require.NoError(t, err)
}

// A loop's samples go in with their signed event and come back as they
// went in; a second sample of the same id, a sample of what is not a
// loop, a sample with no measure or from the future, and a member who
// may not record chemistry are refused, naming the loop, the sample and
// the field; the samples are append-only, and the store checks clean.
func testChemistry(t *testing.T, e *engine) {
	ctx := context.Background()
	clk := newClock()
	s := stage(t, e, clk, "design")
	withChemist(t, s)
	loops, err := s.Loops(ctx)
	require.NoError(t, err)
	require.Contains(t, loops, "l1/loop")

	taken := clk.Now().Add(-48 * time.Hour).UTC().Truncate(time.Microsecond)
	in := lifecycle.Sample{Loop: "l1/loop", SampleID: "LAB-2026-0101", Taken: taken, Lab: "Acme Water Lab",
		Conductivity: num(1450), PH: num(9.1), Glycol: num(24.5)}
	got, err := s.RecordSample(ctx, as(t, "operator"), in)
	require.NoError(t, err)
	assert.Equal(t, "ssh:operator", got.RecordedBy)
	assert.NotZero(t, got.Event)

	list, err := s.Samples(ctx, "l1/loop")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, got, list[0])
	assert.Nil(t, list[0].Particulates, "a measure not taken stays not taken")
	assert.InDelta(t, 9.1, *list[0].PH, 1e-9)

	_, hist, err := s.History(ctx, "l1/loop", time.Time{})
	require.NoError(t, err)
	last := hist[len(hist)-1]
	assert.Equal(t, lifecycle.EvChemistry, last.Kind)
	assert.True(t, last.Signed)
	assert.Contains(t, last.Reason, "LAB-2026-0101")

	var se *lifecycle.SampleError
	_, err = s.RecordSample(ctx, as(t, "operator"), in)
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "sample_id", se.Field)
	assert.Contains(t, err.Error(), "sample LAB-2026-0101 of loop l1/loop")
	assert.Contains(t, err.Error(), "samples are never changed")

	for _, c := range []struct {
		name  string
		smp   lifecycle.Sample
		field string
		want  string
	}{
		{"no measure", lifecycle.Sample{Loop: "l1/loop", SampleID: "X1", Taken: taken, Lab: "lab"}, "", "no measure"},
		{"future", lifecycle.Sample{Loop: "l1/loop", SampleID: "X2", Taken: clk.Now().Add(72 * time.Hour), Lab: "lab", PH: num(9)}, "taken", "after now"},
		{"impossible pH", lifecycle.Sample{Loop: "l1/loop", SampleID: "X3", Taken: taken, Lab: "lab", PH: num(15)}, "ph", "not a possible value"},
		{"no lab", lifecycle.Sample{Loop: "l1/loop", SampleID: "X4", Taken: taken, PH: num(9)}, "lab", "--lab"},
		{"not a loop", lifecycle.Sample{Loop: "l1/loop/cdu-1", SampleID: "X5", Taken: taken, Lab: "lab", PH: num(9)}, "", "not a cooling loop"},
	} {
		_, err := s.RecordSample(ctx, as(t, "operator"), c.smp)
		require.True(t, errors.As(err, &se), "%s: %v", c.name, err)
		assert.Equal(t, c.field, se.Field, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}

	_, err = s.RecordSample(ctx, as(t, "odm"), lifecycle.Sample{Loop: "l1/loop", SampleID: "X6", Taken: taken, Lab: "lab", PH: num(9)})
	var ae *lifecycle.AccessError
	require.True(t, errors.As(err, &ae), "a vendor may not record chemistry: %v", err)

	_, err = s.DB().ExecContext(ctx, "UPDATE chem_samples SET ph = 7")
	assert.ErrorContains(t, err, "append-only")
	_, err = s.DB().ExecContext(ctx, "DELETE FROM chem_samples")
	assert.ErrorContains(t, err, "append-only")

	list, err = s.Samples(ctx, "")
	require.NoError(t, err)
	assert.Len(t, list, 1, "nothing refused was written")
	checkOK(t, s)

	// check finds a sample changed behind the store's back
	disable := []string{"DROP TRIGGER chem_samples_no_update", "DROP TRIGGER chem_samples_no_delete"}
	if e.name == lifecycle.Postgres {
		disable = []string{"ALTER TABLE chem_samples DISABLE TRIGGER chem_samples_no_update"}
	}
	for _, q := range disable {
		_, err = s.DB().ExecContext(ctx, q)
		require.NoError(t, err)
	}
	_, err = s.DB().ExecContext(ctx, "UPDATE chem_samples SET ph = 7.2")
	require.NoError(t, err)
	r, err := s.Check(ctx, nil)
	require.NoError(t, err)
	require.Len(t, r.Problems, 1)
	assert.Contains(t, r.Problems[0], "sample LAB-2026-0101 of l1/loop is not what its event")
	_, err = s.DB().ExecContext(ctx, "DELETE FROM chem_samples")
	require.NoError(t, err)
	r, err = s.Check(ctx, nil)
	require.NoError(t, err)
	require.Len(t, r.Problems, 1)
	assert.Contains(t, r.Problems[0], "has no sample: a sample was deleted behind the store's back")
}

// A store of schema version 1 (before water chemistry) is migrated
// forward when it is opened: its history stays, and samples go in.
func testChemistryMigrates(t *testing.T, e *engine) {
	ctx := context.Background()
	clk := newClock()
	s, cfg := stageCfg(t, e, clk, "design")
	undoLedger(t, e, s, nil)
	undo := []string{"DROP TABLE chem_samples", "DELETE FROM seam_schema WHERE version = 2"}
	if e.name == lifecycle.Postgres {
		undo = append(undo, "DROP FUNCTION seam_chem_append_only()")
	}
	for _, q := range undo {
		_, err := s.DB().ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	before, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, before.Schema)
	require.NoError(t, s.Close())

	again, err := lifecycle.Open(ctx, cfg)
	require.NoError(t, err)
	defer again.Close()
	after, err := again.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, lifecycle.SchemaVersion(), after.Schema)
	assert.Equal(t, before.Events, after.Events)
	withChemist(t, again)
	_, err = again.RecordSample(ctx, as(t, "operator"), lifecycle.Sample{Loop: "l2/loop", SampleID: "M-1", Taken: clk.Now().Add(-time.Hour), Lab: "lab", PH: num(9)})
	require.NoError(t, err)
	checkOK(t, again)
}

// Overdue and out-of-limit loops, against the built-in table, a limits
// file's default and a loop's own entry.
func TestEvaluateChemistry(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	dir := t.TempDir()
	file := filepath.Join(dir, "limits.json")
	require.NoError(t, os.WriteFile(file, []byte(`{
  "format": "seam.chemistry.limits/v1",
  "default": {"interval_days": 14, "conductivity_us_cm": {"max": 3000, "source": "CDU vendor manual, coolant section"}},
  "loops": {"l3/loop": {"fluid": "water", "interval_days": 7}}
}`), 0o644))
	lf, err := lifecycle.LoadLimits(file)
	require.NoError(t, err)
	assert.Equal(t, 14*day, lf.For("l1/loop").Interval())
	assert.Equal(t, "pg25", lf.For("l1/loop").Fluid)
	assert.Equal(t, "water", lf.For("l3/loop").Fluid)
	assert.Equal(t, 3000.0, *lf.For("l3/loop").Conductivity.Max, "the file's default over the fluid's table")
	var none *lifecycle.LimitsFile
	assert.Equal(t, lifecycle.DefaultInterval, none.For("l1/loop").Interval())

	smp := func(loop, id string, ago time.Duration, ph, glycol, cond float64) lifecycle.Sample {
		return lifecycle.Sample{Loop: loop, SampleID: id, Taken: now.Add(-ago), Lab: "lab", PH: num(ph), Glycol: num(glycol), Conductivity: num(cond)}
	}
	for _, c := range []struct {
		name    string
		loops   []string
		samples []lifecycle.Sample
		lf      *lifecycle.LimitsFile
		want    []string // kind field
	}{
		{"in limits, in time", []string{"l1/loop"}, []lifecycle.Sample{smp("l1/loop", "a", 3*day, 9.2, 25, 1500)}, lf, nil},
		{"never sampled", []string{"l1/loop"}, nil, lf, []string{"overdue "}},
		{"overdue by the file", []string{"l1/loop"}, []lifecycle.Sample{smp("l1/loop", "a", 15*day, 9.2, 25, 1500)}, lf, []string{"overdue "}},
		{"in time by the built-in 30 days", []string{"l1/loop"}, []lifecycle.Sample{smp("l1/loop", "a", 15*day, 9.2, 25, 1500)}, nil, nil},
		{"glycol low, conductivity high", []string{"l1/loop"}, []lifecycle.Sample{smp("l1/loop", "a", day, 9.2, 18, 3500)}, lf,
			[]string{"out_of_limits conductivity_us_cm", "out_of_limits glycol_pct"}},
		{"the latest sample counts", []string{"l1/loop"}, []lifecycle.Sample{smp("l1/loop", "new", day, 9.2, 25, 1500), smp("l1/loop", "old", 5*day, 7.0, 25, 1500)}, lf, nil},
		{"water loop: pH low", []string{"l3/loop"}, []lifecycle.Sample{smp("l3/loop", "w", day, 7.5, 0, 10)}, lf, []string{"out_of_limits ph"}},
	} {
		var got []string
		for _, f := range lifecycle.Evaluate(c.loops, c.samples, c.lf, now) {
			got = append(got, f.Kind+" "+f.Field)
			assert.Contains(t, f.Detail, f.Loop, c.name)
		}
		assert.Equal(t, c.want, got, c.name)
	}
	out := lifecycle.Evaluate([]string{"l1/loop"}, []lifecycle.Sample{smp("l1/loop", "S-9", day, 9.2, 18, 1500)}, lf, now)
	require.Len(t, out, 1)
	assert.Equal(t, "sample S-9 of l1/loop (lab, 2026-10-31): glycol 18 % is below its minimum 22 % ("+
		"inhibited propylene-glycol coolant (PG25) data sheets: 25 % ±3, in-service pH)", out[0].Detail)

	for _, c := range []struct{ name, doc, want string }{
		{"unknown field", `{"format": "seam.chemistry.limits/v1", "default": {"ph_max": 9}}`, `unknown field "ph_max"`},
		{"bad fluid", `{"format": "seam.chemistry.limits/v1", "default": {}, "loops": {"l1/loop": {"fluid": "brine"}}}`, `loop l1/loop: fluid "brine": the built-in tables are pg25, water`},
		{"min above max", `{"format": "seam.chemistry.limits/v1", "default": {"ph": {"min": 10, "max": 9}}}`, "default: ph: min 10 is above max 9"},
		{"wrong format", `{"format": "x", "default": {}}`, `format "x"`},
		{"type, with its line", "{\"format\": \"seam.chemistry.limits/v1\",\n \"default\": {\"interval_days\": \"often\"}}", "line 2"},
	} {
		p := filepath.Join(dir, "bad.json")
		require.NoError(t, os.WriteFile(p, []byte(c.doc), 0o644))
		_, err := lifecycle.LoadLimits(p)
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
		assert.Contains(t, err.Error(), p, c.name)
	}
}
