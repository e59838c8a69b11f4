package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/report/reporttest"
)

func deltaOf(t *testing.T, c *Comparison, clause, check string) Delta {
	t.Helper()
	for _, d := range c.Deltas {
		if d.Clause == clause && d.Check == check {
			return d
		}
	}
	t.Fatalf("no delta for %s %s", clause, check)
	return Delta{}
}

// TestCompareFATWithSAT compares the FAT of power block p1 at the
// factory with the SAT of module ma on site, where p1 now answers each
// load step 70 % harder (a regulator damaged in transport).
func TestCompareFATWithSAT(t *testing.T) {
	fat, err := Load(writeBundle(t, "fat", "p1", reporttest.Options{}), Options{})
	require.NoError(t, err)
	sat, err := Load(writeBundle(t, "sat", "ma", reporttest.Options{Scale: 1.7}), Options{})
	require.NoError(t, err)
	c := Compare(fat, sat, 0.2)

	dev := deltaOf(t, c, `boundaries."p1-ma".transient."training-voltage"`, "guarantee-max-deviation")
	assert.Equal(t, Worse, dev.Flag)
	assert.Equal(t, "fat.p1-ma.transient.training-voltage", dev.CaseA)
	assert.Equal(t, "sat.p1-ma.transient.training-voltage", dev.CaseB)
	assert.Greater(t, dev.Change, 5.0, "the deviation grew by volts")
	assert.Greater(t, dev.Consumed, 0.2)
	assert.Equal(t, "PASS", dev.B.Verdict, "still inside the contract: only the comparison sees it")

	steady := deltaOf(t, c, `boundaries."p1-ma".steady."voltage-a"`, "guarantee-in-band")
	assert.Equal(t, Same, steady.Flag, "steady values did not move")

	only := deltaOf(t, c, `boundaries."p1-ma".steady."voltage-a"`, "require-in-band")
	assert.Equal(t, OnlyB, only.Flag, "the consumer's side is graded on site only")
	assert.True(t, c.Flagged())

	var out bytes.Buffer
	require.NoError(t, c.WriteText(&out))
	assert.Regexp(t, `worse\s+boundaries."p1-ma".transient."training-voltage"\s+guarantee-max-deviation\s+p1/ma/feed-a/voltage\s+\S+ V\s+\S+ V\s+\+\S+ V \(-\d+ % of margin\)`, out.String())
	out.Reset()
	require.NoError(t, c.WriteCSV(&out))
	assert.Contains(t, out.String(), "flag,clause,check,channel,unit,case_a,case_b,measured_a,measured_b")
}

func TestCompareFlags(t *testing.T) {
	chk := func(verdict string, measured, margin float64) *Check {
		return &Check{ID: "k", Unit: "V", Verdict: verdict, Measured: measured, Margin: margin, HasValue: true}
	}
	tests := []struct {
		name string
		a, b *Check
		flag string
	}{
		{"same", chk(Pass, 10, 10), chk(Pass, 11, 9), Same},
		{"a fifth of the margin lost", chk(Pass, 10, 10), chk(Pass, 12.5, 7.5), Worse},
		{"margin grew", chk(Pass, 10, 10), chk(Pass, 7, 13), Better},
		{"regressed", chk(Pass, 10, 1), chk(Fail, 12, -1), Regressed},
		{"recovered", chk(Fail, 12, -1), chk(Pass, 10, 1), Recovered},
		{"nothing measured", chk(Pass, 10, 10), &Check{ID: "k", Verdict: Pass}, NotComparable},
		{"units differ", chk(Pass, 10, 10), &Check{ID: "k", Unit: "kV", Verdict: Pass, HasValue: true}, NotComparable},
		{"zero margin then less", chk(Pass, 10, 0), chk(Pass, 10.1, -0.1), Worse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Delta{A: tt.a, B: tt.b}
			d.grade(0.2)
			assert.Equal(t, tt.flag, d.Flag)
		})
	}
}

func TestCompareRunWithItself(t *testing.T) {
	r, err := Load(writeBundle(t, "ist", "ma", reporttest.Options{}), Options{})
	require.NoError(t, err)
	c := Compare(r, r, 0.2)
	assert.False(t, c.Flagged())
	for _, d := range c.Deltas {
		assert.Equal(t, Same, d.Flag, "%s %s", d.Clause, d.Check)
	}
}
