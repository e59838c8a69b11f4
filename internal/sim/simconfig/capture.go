package simconfig

import (
	"path/filepath"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/internal/units"
)

// Captures is the simulated power-quality analyser: it records every
// power block's feed voltages as IEEE C37.111 COMTRADE captures of the
// site's transients (load steps, feed transfers), and the grid's voltage
// and the site's power at the point of interconnection when the grid
// dips, with its own clock.
type Captures struct {
	Dir     string  // absolute: where the captures are written
	OffsetS float64 // the analyser's clock minus the site's, s
	RateHz  float64 // samples per second (default 1000)
	PreS    float64 // recorded before the trigger (default 1 s)
	PostS   float64 // recorded after it (default 2 s)
	// TriggerPct is the RMS change within one line cycle that triggers
	// a capture, in % of nominal (default 0.5 %).
	TriggerPct float64
}

// captures decodes sim.captures (nil: none).
func (d *decoder) captures(sim cue.Value) *Captures {
	v := sim.LookupPath(cue.ParsePath("captures"))
	if !v.Exists() {
		return nil
	}
	c := &Captures{Dir: str(v, "dir"), RateHz: 1000, PreS: 1, PostS: 2, TriggerPct: 0.5}
	if !filepath.IsAbs(c.Dir) {
		c.Dir = filepath.Join(d.r.Dir, c.Dir)
	}
	for _, f := range []struct {
		name string
		dim  units.Dimension
		dst  *float64
	}{{"offset", units.Time, &c.OffsetS}, {"rate", units.Frequency, &c.RateHz}, {"pre", units.Time, &c.PreS}, {"post", units.Time, &c.PostS}, {"trigger", units.Ratio, &c.TriggerPct}} {
		if q := v.LookupPath(cue.ParsePath(f.name)); q.Exists() {
			*f.dst = d.quantity(q, "sim.captures."+f.name, f.dim)
		}
	}
	if c.RateHz < 1000 {
		d.diags.Errorf(RuleUnit, d.r.UserPos(v), "", "sim.captures.rate: %g Hz; an analyser capture grades RMS per half cycle and needs at least 1000 Hz", c.RateHz)
	}
	return c
}
