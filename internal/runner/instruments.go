package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/results"
)

// ambient reads the binding's ambient channels once each, a device
// read once for all its channels: the conditions a case ran in.
func (r *Runner) ambient(ctx context.Context) []results.Ambient {
	b := r.cfg.Site.Binding
	if b == nil || len(b.Ambient) == 0 {
		return nil
	}
	read := map[string]map[string]probe.Reading{}
	var out []results.Ambient
	for _, ch := range b.Ambient {
		a := results.Ambient{Channel: ch}
		src, err := r.cfg.Site.source(ch)
		if err != nil {
			a.Problem = err.Error()
			out = append(out, a)
			continue
		}
		name := src.device.Name()
		if read[name] == nil {
			read[name] = map[string]probe.Reading{}
			rs, err := src.device.Read(ctx)
			if err != nil {
				r.log.Warn("ambient: device did not answer", "device", name, "err", err)
			}
			for _, rd := range rs {
				read[name][rd.Point] = rd
			}
		}
		rd, ok := read[name][src.point]
		switch {
		case !ok:
			a.Problem = fmt.Sprintf("device %s returned no reading of %s", name, src.point)
		case rd.Quality != probe.Good:
			a.Problem = fmt.Sprintf("device %s point %s: %s", name, src.point, rd.Quality)
			if rd.Err != nil {
				a.Problem += ": " + rd.Err.Error()
			}
		default:
			v := rd.Value
			a.Value, a.Unit = &v, rd.Unit
		}
		out = append(out, a)
	}
	return out
}

// instruments lists the binding's instruments with their calibration on
// the run's day (UTC); an overdue one is logged as a warning.
func (r *Runner) instruments() []results.Instrument {
	b := r.cfg.Site.Binding
	if b == nil {
		return nil
	}
	day := r.clk.Now().UTC().Format(time.DateOnly)
	var out []results.Instrument
	for _, d := range b.Devices {
		i := d.Instrument
		if i == nil {
			continue
		}
		ri := results.Instrument{Device: d.Name, Make: i.Make, Model: i.Model, Serial: i.Serial, Calibrated: i.Calibrated,
			Due: i.Due, Certificate: i.Certificate, Overdue: i.Overdue(day)}
		if ri.Overdue {
			r.cfg.Log.Warn("instrument calibration overdue", "device", d.Name, "serial", i.Serial, "due", i.Due,
				"hint", "recalibrate it, or record why it may be used (sat attach the deviation)")
		}
		out = append(out, ri)
	}
	return out
}
