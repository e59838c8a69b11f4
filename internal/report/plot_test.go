package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTimeTicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (timeTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	assert.Equal(t, []string{"0", "50", "100", "150", "200", "250"}, labels(0, 268.6))
	assert.Equal(t, []string{"0", "5", "10", "15", "20", "25", "30", "35"}, labels(0, 35.5))
	assert.Equal(t, []string{"0", "500", "1000", "1500", "2000", "2500", "3000", "3500"}, labels(0, 3600))
	assert.Equal(t, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}, labels(0, 1))
	assert.Len(t, (timeTicks{}).Ticks(0, 268.6), 27, "minor ticks every fifth of a step")
}
