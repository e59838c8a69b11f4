package plan_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/canon"
	"github.com/seamdc/seam/internal/plan"
)

var f = plan.F

// sample is a small plan that uses every op, every check kind and every
// optional field.
func sample() *plan.Plan {
	src := []string{"boundaries.b.steady.v.guarantee.nominal", "boundaries.b.steady.v.guarantee.tolerance"}
	return &plan.Plan{
		Header: plan.Header{Format: plan.Format, Generated: plan.Generated, Tool: plan.Tool{Name: "contractc", Version: "test"},
			Site: "s", Level: plan.All, Module: "m", Options: plan.Options{MaxHoldS: 30}, EstimatedS: 100,
			Inputs: plan.Inputs{Contracts: digest('a'), Boundaries: map[string]string{"b": digest('b')}, Files: map[string]string{"it.cue": digest('d')}, Schema: digest('c'), SchemaVersion: "v1"}},
		LoadBanks: []plan.LoadBank{{ID: "lb", Module: "m", Kind: "resistive", RatingKW: 2500, ResolutionKW: 5, MaxRateKWPerS: 50000}},
		Interlocks: []plan.Interlock{{ID: "v", Channel: "p/m/v", Unit: "V", Min: f(360), Max: f(460), MaxPeriodS: 1, MaxSilenceS: 5,
			Reason: "band", Sources: src}},
		Sources:       map[string]plan.Source{src[0]: {Pos: "power.cue:1:2", Value: "415 V"}, src[1]: {Pos: "power.cue:1:9", Value: "3 %"}},
		Commissioning: plan.DefaultCommissioning(),
		Boundaries: []plan.Boundary{
			{ID: "b", Supplier: plan.Party{Module: "p", Party: "VoltSkid"}, Consumer: plan.Party{Module: "m", Party: "GPUWorks"},
				Signatures: []plan.Signature{{Party: "VoltSkid", Status: "signed", Key: "SHA256:abc", SignedAt: "2026-01-02T03:04:05Z"},
					{Party: "GPUWorks", Status: "missing"}}},
			{ID: "g", Supplier: plan.Party{Module: "u", Party: "Grid Co"}, Consumer: plan.Party{Module: "s"},
				Signatures: []plan.Signature{{Party: "Grid Co", Status: "stale", Key: "SHA256:def", SignedAt: "2025-01-02T03:04:05Z"},
					{Party: "SiteOps", Status: "invalid", Key: "SHA256:0123"}}},
		},
		Cases: []plan.Case{
			{ID: "sat.b.steady.v", Level: plan.SAT, Kind: plan.Steady, Title: "steady", Module: "m", Boundary: "b", Commissioning: plan.L3,
				Clause: plan.ClauseRef{Path: "boundaries.b.steady.v", Pos: "it.cue:3:4", BoundaryDigest: digest('b')},
				Sides:  []string{plan.Guarantee, plan.Require}, Interlocks: []string{"v"},
				Preconditions: []plan.Precondition{{Kind: plan.PreState, Text: "connected"}, {Kind: plan.PreLoadBankIdle, LoadBank: "lb", Text: "idle"}},
				Steps: []plan.Step{
					{ID: "start", Op: plan.OpSetLoad, LoadBank: "lb", KW: f(0)},
					{ID: "ramp", Op: plan.OpRamp, LoadBank: "lb", FromKW: f(0), KW: f(500), RateKWPerS: 50, EstimatedS: 10, Note: "up"},
					{ID: "hold", Op: plan.OpHold, DurationS: 30, EstimatedS: 30},
					{ID: "wave", Op: plan.OpSquareWave, LoadBank: "lb", LowKW: f(500), HighKW: f(2000), PeriodS: 4, DutyPct: 50, RateKWPerS: 20000, Cycles: 3, EstimatedS: 12},
				},
				Checks: []plan.Check{
					{ID: "in-band", Kind: plan.InBand, Side: plan.Guarantee, Channel: "p/m/v", Unit: "V", Min: f(402.55), Max: f(427.45), Steps: []string{"hold"}, Sources: src},
					{ID: "dev", Kind: plan.MaxDeviation, Side: plan.Require, Channel: "p/m/v", Unit: "V", Reference: f(415), MaxDeviation: f(41.5), Steps: []string{"wave"}, Sources: src},
					{ID: "rec", Kind: plan.RecoveryTime, Side: plan.Require, Channel: "p/m/v", Unit: "V", Min: f(394), WithinS: 2, Steps: []string{"wave"}, Sources: src},
				},
				Sampling:   []plan.Sampling{{Channel: "p/m/v", MaxPeriodS: 0.2, Reason: "recovery"}},
				EstimatedS: 52},
			{ID: "ist.b.failure.f", Level: plan.IST, Kind: plan.Failure, Title: "failure", Module: "m", Boundary: "b", Commissioning: plan.L5,
				Clause: plan.ClauseRef{Path: "boundaries.b.failure.f", Pos: "it.cue:9:4", BoundaryDigest: digest('b')},
				Sides:  []string{plan.Require}, Interlocks: []string{},
				Preconditions: []plan.Precondition{{Kind: plan.PreCasePassed, Case: "sat.b.steady.v", Text: "passed"}},
				Steps: []plan.Step{
					{ID: "inject", Op: plan.OpInjectFault, Event: "pump_trip", Target: "l/loop/cdu-1/p1", Action: "Stop pump", Expect: "stopped", EstimatedS: 1},
					{ID: "await", Op: plan.OpAwaitAlarm, Channel: "l/m/alarm", TimeoutS: 10, EstimatedS: 5},
					{ID: "restore", Op: plan.OpRestore, Event: "pump_trip", Target: "l/loop/cdu-1/p1", Action: "Start pump", Expect: "running", EstimatedS: 1},
					{ID: "open", Op: plan.OpOperator, Event: "feed_loss", Target: "p/block/a", Action: "Open breaker", Expect: "open", EstimatedS: 120},
				},
				Checks: []plan.Check{
					{ID: "alarm", Kind: plan.AlarmWithin, Side: plan.Require, Channel: "l/m/alarm", WithinS: 5, From: "inject", Sources: src},
					{ID: "up", Kind: plan.NoInterruption, Side: plan.Require, Channel: "p/m/v", Unit: "V", Min: f(373.5), Max: f(500), From: "inject", ForS: 20, Sources: src},
					{ID: "settle", Kind: plan.SettlesWithin, Side: plan.Require, Channel: "p/m/v", Unit: "V", Min: f(394), Max: f(436), WithinS: 10, From: "inject", ForS: 20, Sources: src},
					{ID: "degraded", Kind: plan.InBand, Side: plan.Require, Channel: "p/m/v", Unit: "V", Min: f(300), From: "inject", ForS: 20, Sources: src},
				},
				Sampling:   []plan.Sampling{{Channel: "l/m/alarm", MaxPeriodS: 0.5, Reason: "alarm"}, {Channel: "p/m/v", MaxPeriodS: 0.2, Reason: "rms"}},
				Suppressed: []plan.Suppressed{{Channel: "l/m/leak", Reason: "raised on purpose"}},
				EstimatedS: 127},
			{ID: "ist.g.grid.oscillation", Level: plan.IST, Kind: plan.Grid, Title: "grid", Module: "s", Boundary: "g", Commissioning: plan.L5,
				Clause: plan.ClauseRef{Path: "boundaries.g.grid.require.oscillation", Pos: "grid.cue:9:4", BoundaryDigest: digest('b')},
				Sides:  []string{plan.Require}, Interlocks: []string{}, Preconditions: []plan.Precondition{},
				Steps: []plan.Step{
					{ID: "train", Op: plan.OpTrain, Driver: plan.DriverFleet, PeriodS: 1, DutyPct: 70, DurationS: 90, StallAtS: 60, StallS: 20, EstimatedS: 90},
					{ID: "banks", Op: plan.OpTrain, Driver: plan.DriverLoadBanks, PeriodS: 10, DutyPct: 70, DurationS: 90, LowKW: f(200), HighKW: f(800), EstimatedS: 90},
					{ID: "dip", Op: plan.OpGridDip, Target: "u1", VoltagePU: f(0.5), DurationS: 0.3, EstimatedS: 1},
				},
				Checks: []plan.Check{
					{ID: "ramp", Kind: plan.GridRamp, Side: plan.Require, Channel: "g/poi/power", Unit: "W", Max: f(1e6), WindowS: 1, Direction: plan.Up, Steps: []string{"train"}, Sources: src},
					{ID: "swing", Kind: plan.GridSwing, Side: plan.Require, Channel: "g/poi/power", Unit: "W", Max: f(1.3e6), WindowS: 60, Steps: []string{"train"}, Sources: src},
					{ID: "line", Kind: plan.GridLine, Side: plan.Require, Channel: "g/poi/power", Unit: "W", Max: f(65e3), BandLowHz: 0.1, BandHighHz: 20, WindowS: 60, Steps: []string{"train"}, Sources: src},
					{ID: "rms", Kind: plan.GridBandRMS, Side: plan.Require, Channel: "g/poi/power", Unit: "W", Max: f(65e3), BandLowHz: 0.1, BandHighHz: 20, WindowS: 60, SegmentS: 20, Steps: []string{"train"}, Sources: src},
					{ID: "restore", Kind: plan.RestoresWithin, Side: plan.Require, Channel: "g/poi/power", SharePct: 90, ReferenceS: 5, WithinS: 1, From: "dip", ForS: 10, Sources: src},
				},
				Sampling:   []plan.Sampling{{Channel: "g/poi/power", MaxPeriodS: 0.02, Reason: "band"}},
				EstimatedS: 181},
		},
		Coverage: []plan.Coverage{
			{Clause: "boundaries.b.steady.v", Pos: "it.cue:3:4", Status: plan.Full, Cases: []string{"sat.b.steady.v"}},
			{Clause: "boundaries.b.failure.f", Pos: "it.cue:9:4", Status: plan.Partial, Cases: []string{"ist.b.failure.f"}, Reasons: []string{"ist: rms"}},
			{Clause: "boundaries.b.failure.g", Pos: "it.cue:19:4", Status: plan.Untestable, Cases: []string{}, Reasons: []string{"ist: no load bank"}},
			{Clause: "boundaries.b.steady.w", Pos: "it.cue:29:4", Status: plan.NotAtLevel, Cases: []string{}, Reasons: []string{"ist: at SAT"}},
		},
	}
}

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

func TestEncodeRoundTrips(t *testing.T) {
	p := sample()
	b, err := plan.Encode(p)
	require.NoError(t, err)
	back, err := plan.Decode(b)
	require.NoError(t, err)
	require.Equal(t, p, back)
	require.NoError(t, plan.CheckDigest(back), "Encode fills the content digest")
	again, err := plan.Encode(back)
	require.NoError(t, err)
	require.Equal(t, string(b), string(again), "a decoded plan must encode to the same bytes")
}

// An edited plan no longer matches its content digest.
func TestCheckDigestCatchesAnEdit(t *testing.T) {
	p := sample()
	b, err := plan.Encode(p)
	require.NoError(t, err)
	edited := bytes.Replace(b, []byte(`"max": 460`), []byte(`"max": 480`), 1)
	require.NotEqual(t, b, edited)
	back, err := plan.Decode(edited)
	require.NoError(t, err)
	require.ErrorContains(t, plan.CheckDigest(back), "the plan was edited after contractc wrote it")
}

// TestEncodeIsCanonical: the indented plan is canonical JSON (keys
// sorted, shortest numbers) once its whitespace is removed.
func TestEncodeIsCanonical(t *testing.T) {
	b, err := plan.Encode(sample())
	require.NoError(t, err)
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, b))
	c, err := canon.Bytes(compact.Bytes())
	require.NoError(t, err)
	require.Equal(t, string(c), compact.String())
	require.True(t, bytes.HasSuffix(b, []byte("}\n")))
}

// TestSampleUsesEveryField guards the schema against drift: the sample
// sets every field of every plan type, and the schema refuses unknown
// fields, so a Go field the schema does not declare fails the round trip.
func TestSampleUsesEveryField(t *testing.T) {
	b, err := json.Marshal(sample())
	require.NoError(t, err)
	for _, name := range jsonNames(reflect.TypeFor[plan.Plan](), map[reflect.Type]bool{}) {
		require.Contains(t, string(b), `"`+name+`":`, "the sample plan leaves %s unset", name)
	}
}

func jsonNames(t reflect.Type, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return nil
	}
	seen[t] = true
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
		out = append(out, jsonNames(f.Type, seen)...)
	}
	return out
}

// TestFieldsInJSONOrder: encoding/json writes struct fields in
// declaration order; canonical JSON needs them sorted.
func TestFieldsInJSONOrder(t *testing.T) {
	for _, v := range []any{plan.Plan{}, plan.Header{}, plan.Tool{}, plan.Options{}, plan.Inputs{}, plan.LoadBank{},
		plan.Case{}, plan.ClauseRef{}, plan.Precondition{}, plan.Step{}, plan.Check{}, plan.Source{}, plan.Sampling{},
		plan.Interlock{}, plan.Suppressed{}, plan.Coverage{}, plan.Commissioning{}, plan.CxLevel{}, plan.Gate{},
		plan.Boundary{}, plan.Party{}, plan.Signature{}} {
		typ := reflect.TypeOf(v)
		var names []string
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			names = append(names, name)
		}
		require.IsIncreasing(t, names, "%s fields are not in JSON name order", typ.Name())
	}
}

func TestDecodeRejects(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(p map[string]any)
		want   string
	}{
		{"foreign format", func(p map[string]any) { hdr(p)["format"] = "seam.plan/v0" }, `format "seam.plan/v0", but this tool reads "seam.plan/v1"`},
		{"no format", func(p map[string]any) { delete(hdr(p), "format") }, "header.format is missing"},
		{"unknown field", func(p map[string]any) { hdr(p)["colour"] = "red" }, "at /header: additionalProperties 'colour' not allowed"},
		{"unknown step field", func(p map[string]any) { step(p, 0, 0)["speed"] = 1 }, "at /cases/0/steps/0: additionalProperties 'speed' not allowed"},
		{"negative load", func(p map[string]any) { step(p, 0, 0)["kw"] = -5 }, "at /cases/0/steps/0/kw: must be >= 0"},
		{"unknown op", func(p map[string]any) { step(p, 0, 2)["op"] = "jump" }, "at /cases/0/steps/2/op: value must be one of"},
		{"ramp without rate", func(p map[string]any) { delete(step(p, 0, 1), "rate_kw_per_s") }, "at /cases/0/steps/1: property 'rate_kw_per_s' is required"},
		{"ramp without start", func(p map[string]any) { delete(step(p, 0, 1), "from_kw") }, "step ramp (ramp): needs from_kw"},
		{"inject without action", func(p map[string]any) { delete(step(p, 1, 0), "action") }, "step inject (inject_fault): needs action"},
		{"hold with a load", func(p map[string]any) { step(p, 0, 2)["load_bank"] = "lb" }, "step hold (hold): does not use load_bank"},
		{"square wave half", func(p map[string]any) { delete(step(p, 0, 3), "cycles") }, "step wave (square_wave): needs cycles"},
		{"check on unknown step", func(p map[string]any) { check(p, 0, 0)["steps"] = []any{"nope"} }, "check in-band refers to step nope"},
		{"check without window", func(p map[string]any) { delete(check(p, 0, 0), "steps") }, "check in-band (in_band): needs steps or from"},
		{"check unsampled", func(p map[string]any) { kase(p, 0)["sampling"] = []any{} }, "grades channel p/m/v, which has no sampling requirement"},
		{"unknown source", func(p map[string]any) { check(p, 0, 0)["sources"] = []any{"boundaries.x"} }, "source boundaries.x is not in the plan's sources"},
		{"unknown interlock", func(p map[string]any) { kase(p, 0)["interlocks"] = []any{"nope"} }, "interlock nope is not declared"},
		{"unknown load bank", func(p map[string]any) { step(p, 0, 0)["load_bank"] = "lb-x" }, "drives load bank lb-x"},
		{"later precondition", func(p map[string]any) {
			kase(p, 0)["preconditions"] = []any{map[string]any{"kind": "case_passed", "case": "ist.b.failure.f", "text": "x"}}
		}, "precondition names case \"ist.b.failure.f\", which does not run before it"},
		{"duplicate case", func(p map[string]any) {
			kase(p, 1)["id"] = "sat.b.steady.v"
			kase(p, 1)["level"] = "sat"
			kase(p, 1)["kind"] = "steady"
		}, "case sat.b.steady.v is declared twice"},
		{"case id mismatch", func(p map[string]any) { kase(p, 0)["boundary"] = "c" }, "the id does not match"},
		{"coverage of nothing", func(p map[string]any) { cov(p, 0)["cases"] = []any{"sat.x.steady.y"} }, "names case sat.x.steady.y"},
		{"full with reasons", func(p map[string]any) { cov(p, 0)["reasons"] = []any{"why"} }, "full needs cases and no reasons"},
		{"partial without reasons", func(p map[string]any) { delete(cov(p, 1), "reasons") }, "partial needs cases and reasons"},
		{"bad digest", func(p map[string]any) { hdr(p)["inputs"].(map[string]any)["contracts"] = "md5:00" }, "at /header/inputs/contracts: does not match pattern"},
		{"case level not declared", func(p map[string]any) { kase(p, 0)["commissioning"] = "L7" }, "case sat.b.steady.v names commissioning level L7, which the plan does not declare"},
		{"case level malformed", func(p map[string]any) { kase(p, 0)["commissioning"] = "L0" }, "at /cases/0/commissioning: does not match pattern"},
		{"gate of no level", func(p map[string]any) {
			cx(p)["gates"].(map[string]any)["L9"] = map[string]any{"all_cases": true, "max_open": map[string]any{}}
		},
			"the gate of L9 names commissioning level L9"},
		{"commissioned no level", func(p map[string]any) { cx(p)["commissioned"] = []any{"L3", "L8"} }, "commissioned names commissioning level L8"},
		{"map to no level", func(p map[string]any) { cx(p)["map"].(map[string]any)["probe"] = "L6" }, "commissioning map entry probe names commissioning level L6"},
		{"map key unknown", func(p map[string]any) { cx(p)["map"].(map[string]any)["sat.stedy"] = "L3" }, "at /commissioning/map/sat.stedy: does not match pattern"},
		{"level twice", func(p map[string]any) {
			cx(p)["levels"] = append(cx(p)["levels"].([]any), map[string]any{"id": "L1", "name": "again", "colour": "#000000"})
		}, "commissioning level L1 is declared twice"},
		{"bad colour", func(p map[string]any) { cx(p)["levels"].([]any)[0].(map[string]any)["colour"] = "grey" }, "at /commissioning/levels/0/colour: does not match pattern"},
		{"bad severity", func(p map[string]any) { cx(p)["severity"].(map[string]any)["failure"] = "urgent" }, "at /commissioning/severity/failure: value must be one of"},
		{"negative max open", func(p map[string]any) {
			cx(p)["gates"].(map[string]any)["L3"].(map[string]any)["max_open"].(map[string]any)["minor"] = -1
		}, "at /commissioning/gates/L3/max_open/minor: must be >= 0"},
		{"bad signature status", func(p map[string]any) { sig(p, 0, 1)["status"] = "lost" }, "at /boundaries/0/signatures/1/status: value must be one of"},
		{"signature twice", func(p map[string]any) {
			bnd(p, 0)["signatures"] = append(bnd(p, 0)["signatures"].([]any), map[string]any{"party": "VoltSkid", "status": "missing"})
		}, "boundary b: party VoltSkid's signature is recorded twice"},
		{"case boundary unrecorded", func(p map[string]any) { p["boundaries"] = p["boundaries"].([]any)[:1] }, "case ist.g.grid.oscillation: boundary g has no record"},
		{"unknown party field", func(p map[string]any) { bnd(p, 0)["supplier"].(map[string]any)["vendor"] = "x" }, "at /boundaries/0/supplier: additionalProperties 'vendor' not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := plan.Encode(sample())
			require.NoError(t, err)
			var doc map[string]any
			require.NoError(t, json.Unmarshal(b, &doc))
			tc.mutate(doc)
			b, err = json.Marshal(doc)
			require.NoError(t, err)
			_, err = plan.Decode(b)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func hdr(p map[string]any) map[string]any        { return p["header"].(map[string]any) }
func cx(p map[string]any) map[string]any         { return p["commissioning"].(map[string]any) }
func bnd(p map[string]any, i int) map[string]any { return p["boundaries"].([]any)[i].(map[string]any) }
func sig(p map[string]any, b, i int) map[string]any {
	return bnd(p, b)["signatures"].([]any)[i].(map[string]any)
}
func kase(p map[string]any, i int) map[string]any { return p["cases"].([]any)[i].(map[string]any) }
func cov(p map[string]any, i int) map[string]any  { return p["coverage"].([]any)[i].(map[string]any) }
func step(p map[string]any, c, i int) map[string]any {
	return kase(p, c)["steps"].([]any)[i].(map[string]any)
}
func check(p map[string]any, c, i int) map[string]any {
	return kase(p, c)["checks"].([]any)[i].(map[string]any)
}

func TestDecodeNamesSyntaxErrorPosition(t *testing.T) {
	_, err := plan.Decode([]byte("{\n  \"header\": {\n    \"format\": \"seam.plan/v1\",\n  }\n}\n"))
	require.ErrorContains(t, err, "line 4, column 3")
	_, err = plan.Decode([]byte(`{"header": {"format": "seam.plan/v1"}} {}`))
	require.ErrorContains(t, err, "line 1")
	_, err = plan.Decode([]byte(`[]`))
	require.ErrorContains(t, err, "not a JSON object")
}

func TestEncodeRefusesInvalidPlan(t *testing.T) {
	p := sample()
	p.Cases[0].Checks[0].Steps = []string{"missing"}
	_, err := plan.Encode(p)
	require.ErrorContains(t, err, "the compiled plan is not valid")
	require.ErrorContains(t, err, "refers to step missing")
}

func TestSchemaIsDraft2020(t *testing.T) {
	var s map[string]any
	require.NoError(t, json.Unmarshal(plan.Schema(), &s))
	require.Equal(t, "https://json-schema.org/draft/2020-12/schema", s["$schema"])
	require.Equal(t, plan.SchemaURL, s["$id"])
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, plan.SchemaDigest())
}

func TestReadNamesTheFile(t *testing.T) {
	_, err := plan.Read("testdata/missing.json")
	require.ErrorContains(t, err, "testdata/missing.json")
}

// A plan compiled before plans kept boundaries and commissioning still
// reads, and its cases take the default levels by level and kind.
func TestOlderPlanTakesDefaultLevels(t *testing.T) {
	p := sample()
	p.Boundaries, p.Commissioning = nil, nil
	for i := range p.Cases {
		p.Cases[i].Commissioning = ""
	}
	b, err := plan.Encode(p)
	require.NoError(t, err)
	require.NotContains(t, string(b), `"commissioning"`)
	require.NotContains(t, string(b), `"boundaries": [`)
	back, err := plan.Decode(b)
	require.NoError(t, err)
	cx := back.CommissioningRules()
	got := map[string]string{}
	for i := range back.Cases {
		got[back.Cases[i].ID] = cx.LevelOf(&back.Cases[i])
	}
	require.Equal(t, map[string]string{"sat.b.steady.v": plan.L3, "ist.b.failure.f": plan.L5, "ist.g.grid.oscillation": plan.L5}, got)
	// a level the compiler wrote wins over the map
	c := back.Cases[0]
	c.Commissioning = plan.L4
	require.Equal(t, plan.L4, cx.LevelOf(&c))
}
