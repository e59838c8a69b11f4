package profile

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/diag"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestShippedProfiles(t *testing.T) {
	set, diags, err := Load("../../fixtures/profiles")
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.Equal(t, []string{"apc-rpdu2", "generic-cdu-float32", "generic-cdu-int16", "generic-loadbank",
		"generic-poi-meter", "ietf-ups", "raritan-px", "servertech-sentry4"}, set.Names())
	for _, p := range set.Profiles {
		assert.Positive(t, p.UpdatePeriod, p.Name)
		assert.Equal(t, 3*p.UpdatePeriod, p.StaleAfter, p.Name)
		assert.True(t, p.Pos.IsValid(), p.Name)
	}
}

// The shipped plans and SNMP batches, as a golden file: a change in the
// planner or a profile shows up in review.
func TestShippedPlansGolden(t *testing.T) {
	set := shipped(t)
	var b strings.Builder
	for _, p := range set.Profiles {
		fmt.Fprintf(&b, "%s (%s, %d points)\n", p.Name, p.Protocol, len(p.Points))
		for _, r := range p.Plan {
			fmt.Fprintf(&b, "  %s:", r)
			for _, pt := range r.Points {
				fmt.Fprintf(&b, " %s", pt.Name)
			}
			b.WriteString("\n")
		}
		for i, batch := range p.Batches {
			fmt.Fprintf(&b, "  get %d:", i+1)
			for _, pt := range batch {
				fmt.Fprintf(&b, " %s", pt.Name)
			}
			b.WriteString("\n")
		}
	}
	golden(t, "testdata/plans.golden", b.String())
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	assert.Equal(t, string(want), got)
}

// The figure the issue asks for: a 40-point CDU profile in at most 2
// requests, each within the device's limits, every point covered once.
func TestCDU40PointsInTwoRequests(t *testing.T) {
	p := shipped(t).Get("generic-cdu-int16")
	require.Len(t, p.Points, 40)
	require.LessOrEqual(t, len(p.Plan), 2)
	seen := map[string]int{}
	for _, r := range p.Plan {
		assert.LessOrEqual(t, int(r.Count), p.Limits.MaxRegisters)
		for _, pt := range r.Points {
			seen[pt.Name]++
			assert.GreaterOrEqual(t, int(pt.Address), int(r.Start))
			assert.LessOrEqual(t, pt.End(), r.End())
			assert.Equal(t, r.Table, pt.Table)
		}
	}
	assert.Len(t, seen, 40)
	for name, n := range seen {
		assert.Equal(t, 1, n, name)
	}
}

func TestPlanModbus(t *testing.T) {
	reg := func(name string, addr uint16, typ DataType) *Point {
		return &Point{Name: name, Table: Holding, Address: addr, Type: typ}
	}
	tests := []struct {
		name   string
		points []*Point
		lim    Limits
		want   []string
	}{
		{"contiguous points merge", []*Point{reg("a", 0, Uint16), reg("b", 1, Uint32), reg("c", 3, Int16)},
			Limits{MaxRegisters: 125}, []string{"holding 0..3 (3 points)"}},
		{"a gap above max_gap splits", []*Point{reg("a", 0, Uint16), reg("b", 5, Uint16)},
			Limits{MaxRegisters: 125, MaxGap: 3}, []string{"holding 0..0 (1 points)", "holding 5..5 (1 points)"}},
		{"a gap within max_gap merges", []*Point{reg("a", 0, Uint16), reg("b", 5, Uint16)},
			Limits{MaxRegisters: 125, MaxGap: 4}, []string{"holding 0..5 (2 points)"}},
		{"max_registers splits", []*Point{reg("a", 0, Uint32), reg("b", 2, Uint32), reg("c", 4, Uint32)},
			Limits{MaxRegisters: 4}, []string{"holding 0..3 (2 points)", "holding 4..5 (1 points)"}},
		{"a 32-bit point never straddles the limit", []*Point{reg("a", 0, Uint16), reg("b", 1, Uint32)},
			Limits{MaxRegisters: 2}, []string{"holding 0..0 (1 points)", "holding 1..2 (1 points)"}},
		{"bit alarms share their register", []*Point{reg("w", 7, Uint16), reg("x", 7, Uint16), reg("y", 8, Uint16)},
			Limits{MaxRegisters: 125}, []string{"holding 7..8 (3 points)"}},
		{"tables never mix", []*Point{reg("a", 0, Uint16), {Name: "i", Table: Input, Address: 1, Type: Uint16}},
			Limits{MaxRegisters: 125, MaxGap: 10}, []string{"holding 0..0 (1 points)", "input 1..1 (1 points)"}},
		{"coils count bits", []*Point{{Name: "c1", Table: Coil, Address: 0, Type: Bool}, {Name: "c2", Table: Coil, Address: 1999, Type: Bool}},
			Limits{MaxBits: 2000, MaxGap: 2000}, []string{"coil 0..1999 (2 points)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range PlanModbus(tt.points, tt.lim) {
				got = append(got, r.String())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBatchSNMP(t *testing.T) {
	pts := []*Point{{Name: "b", OID: "1.3.6.1.10"}, {Name: "a", OID: "1.3.6.1.9"}, {Name: "a2", OID: "1.3.6.1.9"}, {Name: "c", OID: "1.3.6.1.11.1"}}
	batches := BatchSNMP(pts, 2)
	require.Len(t, batches, 2)
	names := func(b []*Point) (out []string) {
		for _, p := range b {
			out = append(out, p.Name)
		}
		return
	}
	assert.Equal(t, []string{"a", "a2", "b"}, names(batches[0]), "numeric OID order; a shared OID counts once")
	assert.Equal(t, []string{"c"}, names(batches[1]))
	assert.Equal(t, -1, CompareOIDs("1.3.6.1", "1.3.6.1.0"))
	assert.Equal(t, 1, CompareOIDs("1.3.6.10", "1.3.6.9"))
	assert.Equal(t, 0, CompareOIDs("1.3.6", ".1.3.6"))
}

// Bad profiles give a positioned diagnostic with a rule id.
func TestLoadErrors(t *testing.T) {
	const head = "package profiles\n\nprofiles: x: {\n\tvendor: \"v\", model: \"m\", update_period: \"1 s\"\n"
	modbus := head + "\tprotocol: \"modbus\"\n\tpoints: {\n"
	snmp := head + "\tprotocol: \"snmp\"\n\tpoints: {\n"
	tests := []struct {
		name, src, rule, msg string
		line                 int
	}{
		{"unknown unit", modbus + "\t\tt: {table: \"input\", address: 0, type: \"int16\", unit: \"celsius\"}\n\t}\n}\n",
			RuleUnit, `unknown unit "celsius"`, 7},
		{"writable input register", modbus + "\t\tt: {table: \"input\", address: 0, type: \"int16\", access: \"write\"}\n\t}\n}\n",
			RuleAccess, "access is write, but input register 0 is read-only", 7},
		{"bool in a register", modbus + "\t\tt: {table: \"holding\", address: 0, type: \"bool\"}\n\t}\n}\n",
			RuleType, "cannot hold a bool", 7},
		{"overlap", modbus + "\t\ta: {table: \"holding\", address: 0, type: \"uint32\"}\n\t\tb: {table: \"holding\", address: 1, type: \"uint16\"}\n\t}\n}\n",
			RuleOverlap, "a and b overlap at holding register 1", 8},
		{"unknown digits point", snmp + "\t\tv: {oid: \"1.3.6.1.4\", type: \"Gauge32\", unit: \"V\", digits: \"v-digit\"}\n\t}\n}\n",
			RuleReference, `no point "v-digit"`, 7},
		{"alarm bit beyond the type", modbus + "\t\ta: {table: \"input\", address: 0, type: \"uint16\", alarm: {bit: 16}}\n\t}\n}\n",
			RuleAlarm, "bit 16 cannot be read from a uint16", 7},
		{"oid in a modbus profile", modbus + "\t\ta: {table: \"input\", address: 0, type: \"uint16\", oid: \"1.3\"}\n\t}\n}\n",
			"SCHEMA003", "field not allowed", 7},
		{"bad duration", strings.Replace(modbus, "\"1 s\"", "\"1 V\"", 1) + "\t}\n}\n",
			RuleDuration, `"1 V" is a voltage, not a time`, 4},
		{"modbus type in snmp", snmp + "\t\tv: {oid: \"1.3.6.1.4\", type: \"uint16\"}\n\t}\n}\n",
			"SCHEMA001", "type", 7},
		{"stray top-level field", modbus + "\t}\n}\nprofile: {}\n",
			RuleTopLevel, `unknown top-level field "profile"`, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "x.cue"), []byte(tt.src), 0o644))
			_, diags, err := Load(dir)
			require.NoError(t, err)
			require.NotEmpty(t, diags, "want a %s diagnostic", tt.rule)
			d := find(diags, tt.rule)
			require.NotNil(t, d, "want rule %s, got %v", tt.rule, diags)
			assert.Contains(t, d.Message, tt.msg)
			assert.Equal(t, "x.cue", d.Pos.File)
			assert.Equal(t, tt.line, d.Pos.Line, d.Message)
		})
	}
}

func find(diags diag.List, rule string) *diag.Diagnostic {
	for i := range diags {
		if diags[i].Rule == rule {
			return &diags[i]
		}
	}
	return nil
}

func TestLoadMissingDir(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "nope"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nope")
}
