package burnin

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func cohortObs(sku string, vals ...float64) []Observation {
	var out []Observation
	for i, v := range vals {
		out = append(out, Observation{Node: fmt.Sprintf("n%02d", i), Scope: ScopeRack, Ranks: 72, SKU: sku, Measure: MeasureBusBW, Value: v})
	}
	return out
}

func TestAnalyze(t *testing.T) {
	same := make([]float64, 18)
	for i := range same {
		same[i] = 830
	}
	for _, tc := range []struct {
		name  string
		obs   []Observation
		flags []string // node: why prefix
	}{
		{"18 identical nodes: MAD 0, nothing flagged", cohortObs("NVIDIA GB300", same...), nil},
		{"a 0.5 % dip in a MAD-0 cohort is under the floor", cohortObs("NVIDIA GB300", append(same[:17:17], 826)...), nil},
		{"a 10 % dip is flagged", cohortObs("NVIDIA GB300", append(same[:17:17], 747)...), []string{"n17: a robust outlier of 18"}},
		{"a uniformly slow cohort: only the SKU floor catches it", cohortObs("NVIDIA GB300", 700, 701, 699, 700), []string{"n00: below the NVIDIA GB300 floor", "n01: below", "n02: below", "n03: below"}},
		{"two nodes: no cohort, floor only", cohortObs("NVIDIA H100 80GB HBM3", 340, 300), []string{"n01: below the NVIDIA H100 80GB HBM3 floor"}},
		{"an unknown SKU with two nodes: nothing to judge by", cohortObs("NVIDIA X", 340, 1), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			an := Analyze(tc.obs, DefaultFloors())
			require.Len(t, an.Flags, len(tc.flags), "%v", an.Flags)
			for i, f := range an.Flags {
				assert.Contains(t, f.Node+": "+f.Why, tc.flags[i])
				assert.False(t, math.IsNaN(f.Median))
				assert.NotZero(t, f.Threshold)
			}
		})
	}
	// a node's best pair counts, and temperature is judged upwards
	obs := []Observation{}
	for i := range 10 {
		obs = append(obs, Observation{Node: fmt.Sprintf("n%d", i), Scope: ScopePair, Ranks: 8, SKU: "S", Measure: MeasureBusBW, Value: 820},
			Observation{Node: fmt.Sprintf("n%d", i), Scope: ScopeSingle, Ranks: 4, SKU: "S", Measure: MeasureTemp, Value: 64})
	}
	obs = append(obs, Observation{Node: "n3", Scope: ScopePair, Ranks: 8, SKU: "S", Measure: MeasureBusBW, Value: 400})
	obs[1].Value = 88
	an := Analyze(obs, nil)
	require.Len(t, an.Flags, 1, "%v", an.Flags)
	assert.Equal(t, "n0", an.Flags[0].Node)
	assert.Equal(t, MeasureTemp, an.Flags[0].Measure)
	assert.Contains(t, an.Flags[0].String(), "above the threshold")
}
