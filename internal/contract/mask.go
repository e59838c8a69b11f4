package contract

import (
	"strconv"

	"github.com/seamdc/seam/internal/units"
)

func itoa(i int) string { return strconv.Itoa(i) }

func pct(v float64) Q  { return Q{Quantity: units.Of(v, "%"), Set: true} }
func secs(v float64) Q { return Q{Quantity: units.Of(v, "s"), Set: true} }

// ITIC is the ITI (CBEMA) curve for IT equipment as a mask: an excursion
// lasting up to Duration must stay within [Min, Max] % of nominal. Sources
// disagree on the upper limit; this is the ITI note's 120 % to 0.5 s, then
// 110 % (reference/standards.md).
var ITIC = []MaskPoint{
	{Duration: secs(0.02), Min: pct(0), Max: pct(120)},
	{Duration: secs(0.5), Min: pct(70), Max: pct(120)},
	{Duration: secs(10), Min: pct(80), Max: pct(110)},
	{Duration: secs(1e9), Min: pct(90), Max: pct(110)},
}

// MaskAt returns the limits for an excursion lasting d seconds: the first
// point whose duration covers d, or the last point.
func MaskAt(mask []MaskPoint, d float64) MaskPoint {
	for _, p := range mask {
		if p.Duration.Set && d <= p.Duration.Canon {
			return p
		}
	}
	return mask[len(mask)-1]
}
