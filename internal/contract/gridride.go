package contract

import (
	"fmt"
	"slices"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// checkRideThrough checks each UPS's transfer settings against the
// voltage and frequency ride-through clauses.
func checkRideThrough(c *Contracts, g *Grid, diags *diag.List) {
	v, f := g.VoltageRT, g.FrequencyRT
	if v == nil && f == nil {
		return
	}
	for _, t := range c.Grid.Transfers {
		ups := "the UPS of feed " + t.Feed.ID
		if v != nil {
			for _, p := range v.Curve {
				long := !p.Duration.Set || units.Exceeds(p.Duration.Canon, t.After.Canon)
				if units.Exceeds(t.Voltage.Canon, p.Voltage.Canon) && long {
					dur, hint := "indefinitely", fmt.Sprintf("set the UPS to transfer only below %s (its vendor's settings)", p.Voltage.Raw)
					if p.Duration.Set {
						dur = "for " + p.Duration.Raw
						hint = fmt.Sprintf("set the UPS to transfer only below %s, or only after more than %s (its vendor's settings)", p.Voltage.Raw, p.Duration.Raw)
					}
					diags.Errorf(RuleGridRideThrough, t.Voltage.Pos, t.Feed.Path+".ups.transfer", "%s transfers its load to battery when the voltage stays below %s for %s, but the grid requires the site to stay on the grid through %s %s",
						ups, t.Voltage.Raw, t.After.Raw, p.Voltage.Raw, dur).Hint = hint
					break
				}
			}
			if v.RestoreWithin.Set && units.Exceeds(t.BackAfter.Canon, v.RestoreWithin.Canon) {
				diags.Errorf(RuleGridRideThrough, t.BackAfter.Pos, t.Feed.Path+".ups.transfer.back_after", "%s stays on battery for %s after the voltage returns, but the grid requires %s of the power back within %s",
					ups, t.BackAfter.Raw, v.RestoreShare.Raw, v.RestoreWithin.Raw).Hint = "shorten back_after to at most " + v.RestoreWithin.Raw
			}
		}
		if f != nil && t.FrequencyMin.Set && t.FrequencyMax.Set && units.Exceeds(f.Duration.Canon, t.After.Canon) &&
			(units.Exceeds(t.FrequencyMin.Canon, f.Min.Canon) || units.Exceeds(f.Max.Canon, t.FrequencyMax.Canon)) {
			diags.Errorf(RuleGridRideThrough, t.FrequencyMin.Pos, t.Feed.Path+".ups.transfer", "%s transfers when the frequency leaves %s to %s for %s, but the grid requires the site to stay on through %s to %s for %s",
				ups, t.FrequencyMin.Raw, t.FrequencyMax.Raw, t.After.Raw, f.Min.Raw, f.Max.Raw, f.Duration.Raw).Hint = "widen the UPS's frequency window to the ride-through band"
		}
	}
	if v != nil {
		for _, m := range c.Site.Modules {
			for _, b := range m.Blocks {
				for _, fd := range b.Feeds {
					if fd.UPS != nil && !slices.ContainsFunc(c.Grid.Transfers, func(t *UPSTransfer) bool { return t.Feed.ID == fd.ID }) {
						diags.Warnf(RuleGridRideThrough, fd.UPS.Pos, fd.Path+".ups", "the UPS of feed %s states no transfer settings, so nothing shows it rides through the grid's voltage curve", fd.ID).Hint =
							`state them: transfer: {voltage: "0.5 pu", after: "400 ms", back_after: "1 s"}`
					}
				}
			}
		}
	}
}
