package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/seamdc/seam/internal/gridsignal"
	"github.com/seamdc/seam/internal/plan"
)

// basePower is site power against time, in unit (the samples divided by
// scale), ready for bands and marks.
func (gc *GridCase) basePower(st *gridState, scale float64, unit string) *PlotData {
	d := &PlotData{Channel: gc.Channel, Unit: unit, Samples: st.dec.Len() + st.bad, BadQuality: st.bad,
		Duration: st.tl.End.Sub(st.tl.Start).Seconds()}
	for _, p := range st.dec.Points() {
		d.Measured = append(d.Measured, Point{T: p.T, V: p.V / scale})
	}
	if len(d.Measured) == 0 {
		return nil
	}
	return d
}

// powerPlot is site power against time with each ramp and swing limit
// drawn on its check's worst window: from the window's first sample for
// window_s, a swing's band from the lower extreme up by the limit, a
// rise's from the value it rose from up by the limit, a fall's down.
// Samples outside a failed limit's band are marked.
func (gc *GridCase) powerPlot(st *gridState, scale float64, unit string) *PlotData {
	d := gc.basePower(st, scale, unit)
	if d == nil {
		return nil
	}
	for _, k := range gc.Checks {
		if k.worst == nil || !k.HasLimit {
			continue
		}
		failed := k.Verdict == Fail
		lim := k.Limit / scale
		b := Band{From: k.worst.From, To: k.worst.From + k.WindowS, Failed: failed, Lo: math.Inf(-1), Hi: math.Inf(1)}
		word := "swing"
		switch {
		case k.Kind == plan.GridSwing:
			b.Lo = math.Min(k.worstV[0], k.worstV[1]) / scale
			b.Hi = b.Lo + lim
		case k.Direction == plan.Down:
			word, b.Envelope = "fall", true
			b.Hi = k.worstV[0] / scale
			b.Lo = b.Hi - lim
		default:
			word, b.Envelope = "rise", true
			b.Lo = k.worstV[0] / scale
			b.Hi = b.Lo + lim
		}
		b.Label = fmt.Sprintf("%s limit %s within %g s, on the worst window (%s: %s)", word, fmtNum(lim, unit), k.WindowS, k.ID, fmtNum(k.worst.Value/scale, unit))
		// a limit passed with room to spare would flatten the waveform:
		// its band runs to the axis's edge, the legend gives it
		b.Loose = !failed && k.worst.Value < 0.5*k.Limit
		d.Bands = append(d.Bands, b)
		if failed { // passed windows are in the legend: a label each would crowd the strip
			d.Marks = append(d.Marks, Mark{At: k.worst.From, Failed: true,
				Label: fmt.Sprintf("%s %s (≤ %s)", word, fmtNum(k.worst.Value/scale, unit), fmtNum(lim, unit))})
		}
	}
	for _, dr := range gc.Drives {
		if dr.Ran {
			d.Marks = append(d.Marks, Mark{At: dr.Start, Label: fmt.Sprintf("%s: %s, %g s period", dr.Step, dr.Driver, dr.PeriodS)})
		}
	}
	return d
}

// rideThrough is the meter's power against time with the grid's
// voltage as the plan's grid_dip steps commanded it on the lower axis,
// and each restores_within check's threshold (share_pct of the mean
// over reference_s before the dip) from within_s to for_s after it.
// The contract's ride-through curve is not in the plan: the checks'
// sources name its values as written (the caption lists them).
func (gc *GridCase) rideThrough(st *gridState, scale float64, unit string) *PlotData {
	d := gc.basePower(st, scale, unit)
	if d == nil {
		return nil
	}
	volts := []Point{{T: 0, V: 1}}
	for _, dp := range gc.Dips {
		if !dp.Ran {
			continue
		}
		volts = append(volts, Point{T: dp.Start, V: 1}, Point{T: dp.Start, V: dp.VoltagePU},
			Point{T: dp.End, V: dp.VoltagePU}, Point{T: dp.End, V: 1})
		d.Marks = append(d.Marks, Mark{At: dp.Start, Label: fmt.Sprintf("%s: %s at %g pu for %g s", dp.Step, dp.Target, dp.VoltagePU, dp.DurationS)})
	}
	volts = append(volts, Point{T: d.Duration, V: 1})
	d.Commanded = []Series{{Label: "grid voltage at the POI as the plan's grid_dip step sets it", Points: volts}}
	for _, dp := range gc.Dips {
		if !dp.Ran || len(gc.Curve) == 0 {
			continue
		}
		// from the dip's start: each point's voltage until its duration
		var pts []Point
		from := dp.Start
		for _, cp := range gc.Curve {
			pts = append(pts, Point{T: from, V: cp.VoltagePU}, Point{T: dp.Start + cp.DurationS, V: cp.VoltagePU})
			from = dp.Start + cp.DurationS
		}
		d.Curves = append(d.Curves, Series{Label: "the contract's ride-through curve from the dip's start: dips above it are ridden through", Points: pts})
		break
	}
	d.ExcitationUnit, d.ExcitationLabel = "pu", "grid voltage (pu)"
	for _, k := range gc.Checks {
		if k.Kind != plan.RestoresWithin {
			continue
		}
		sp := st.tl.Step(k.From)
		if sp == nil {
			continue
		}
		from, end := sp.Start.Sub(st.tl.Start).Seconds(), sp.End.Sub(st.tl.Start).Seconds()
		sum, n := 0.0, 0
		for i, at := range st.t {
			if t := at.Seconds(); t >= from-k.ReferenceS && t < from {
				sum += st.v[i]
				n++
			}
		}
		if n == 0 {
			continue
		}
		ref := sum / float64(n)
		lo := k.SharePct / 100 * ref / scale
		if k.HasLimit { // the grader's threshold, to the bit
			lo = k.Limit / scale
		}
		failed := k.Verdict == Fail
		d.Bands = append(d.Bands, Band{From: end + k.WithinS, To: end + k.ForS, Lo: lo, Hi: math.Inf(1), Failed: failed,
			Label: fmt.Sprintf("restored: at least %g %% of %s, the mean over the %g s before %s (%s)", k.SharePct, fmtNum(ref/scale, unit), k.ReferenceS, k.From, k.ID)})
		d.Marks = append(d.Marks, Mark{At: end + k.WithinS, Failed: failed, Label: fmt.Sprintf("restored by +%g s", k.WithinS)})
	}
	return zoomDips(d, st, gc, scale)
}

// zoomDips narrows a ride-through plot to its dips: from the reference
// window before the first (at least 5 s) to the end of the restore
// window and of the contract's curve after the last (at least 2 s),
// the samples decimated again over that span so the dip keeps its
// shape. The time axis then counts from the span's start.
func zoomDips(d *PlotData, st *gridState, gc *GridCase, scale float64) *PlotData {
	first, last := math.Inf(1), math.Inf(-1)
	for _, dp := range gc.Dips {
		if dp.Ran {
			first, last = math.Min(first, dp.Start), math.Max(last, dp.End)
		}
	}
	if math.IsInf(first, 0) {
		return d
	}
	before, after := 5.0, 2.0
	for _, k := range gc.Checks {
		if k.Kind == plan.RestoresWithin {
			before, after = math.Max(before, k.ReferenceS+1), math.Max(after, k.ForS+1)
		}
	}
	for _, cp := range gc.Curve {
		after = math.Max(after, cp.DurationS+1)
	}
	a, b := math.Max(0, first-before), math.Min(d.Duration, last+after)
	if b-a >= 0.8*d.Duration {
		return d
	}
	from := st.tl.Start.Add(plan.Seconds(a))
	dec := NewDecimator(from, st.tl.Start.Add(plan.Seconds(b)), DefaultBuckets)
	for i, t := range st.t {
		dec.Add(st.tl.Start.Add(t), st.v[i])
	}
	z := *d
	z.Measured, z.Samples, z.BadQuality = nil, dec.Len(), 0
	for _, p := range dec.Points() {
		z.Measured = append(z.Measured, Point{T: p.T, V: p.V / scale})
	}
	if len(z.Measured) == 0 {
		return d
	}
	z.Duration = b - a
	z.XLabel = fmt.Sprintf("time since +%.1f s into the case (s)", a)
	shift := func(ser []Series) []Series {
		var out []Series
		for _, s := range ser {
			n := Series{Label: s.Label}
			for _, p := range s.Points {
				n.Points = append(n.Points, Point{T: math.Max(0, math.Min(z.Duration, p.T-a)), V: p.V})
			}
			out = append(out, n)
		}
		return out
	}
	z.Commanded, z.Curves = shift(d.Commanded), shift(d.Curves)
	z.Bands, z.Marks = nil, nil
	for _, bd := range d.Bands {
		bd.From, bd.To = bd.From-a, bd.To-a
		z.Bands = append(z.Bands, bd)
	}
	for _, m := range d.Marks {
		m.At -= a
		z.Marks = append(z.Marks, m)
	}
	return &z
}

// SpectrumData is the spectrum of a grid case's graded record against
// its line limits, on a log frequency axis.
type SpectrumData struct {
	Channel, Unit string
	Lines         []gridsignal.Line // every bin from 1/record to rate/2.5, amplitudes in Unit
	From, To      float64           // the record, s since the case started
	Rate          float64
	Samples       int
	Bands         []SpectrumBand
}

// SpectrumBand is a line check's band and limit with the largest line
// the record shows in it.
type SpectrumBand struct {
	Check   string
	Lo, Hi  float64 // Hz
	Limit   float64 // in the spectrum's unit
	Largest gridsignal.Line
	Failed  bool
}

// spectrum takes the first line check's records as the grader cuts
// them (window_s each, one after the other from each run's first
// sample, and one more ending at its last), picks the record with the
// largest line in the check's band (the first of the largest: the one
// the grader reports), and returns its whole spectrum with every line
// check's band, limit and largest line.
func (gc *GridCase) spectrum(st *gridState, scale float64, unit string) (*SpectrumData, error) {
	var first *GridCheck
	for i := range gc.Checks {
		if gc.Checks[i].Kind == plan.GridLine {
			first = &gc.Checks[i]
			break
		}
	}
	runs, err := st.runs(first.planCheck)
	if err != nil {
		return nil, err
	}
	var best gridsignal.Series
	var bestAt float64
	bestAmp := math.Inf(-1)
	var lastErr error
	for _, r := range runs {
		starts, l, _ := r.Records()
		for _, a := range starts {
			rec := gridsignal.Series{Rate: r.Series.Rate, Values: r.Series.Values[a : a+l]}
			line, err := gridsignal.LargestLine(rec, first.BandLowHz, first.BandHighHz)
			if err != nil {
				lastErr = err
				continue
			}
			if line.Amplitude > bestAmp {
				best, bestAt, bestAmp = rec, r.T0.Seconds()+float64(a)/r.Series.Rate, line.Amplitude
			}
		}
	}
	if best.Values == nil {
		if lastErr == nil {
			lastErr = fmt.Errorf("no record of %g s in the samples of %s", first.WindowS, strings.Join(first.steps, ", "))
		}
		return nil, lastErr
	}
	if first.HasValue && math.Abs(first.Measured-bestAmp) > 1e-6*math.Max(1, math.Abs(first.Measured)) {
		gc.Problems = append(gc.Problems, fmt.Sprintf("%s: the spectrum drawn reads its largest line as %s, the grader %s: the plot is of a different record than the one graded",
			first.ID, fmtNum(bestAmp, gc.Unit), fmtNum(first.Measured, gc.Unit)))
	}
	n, rate := len(best.Values), best.Rate
	lines, err := gridsignal.Spectrum(best, rate/float64(n), rate/gridsignal.MinRateFactor)
	if err != nil {
		return nil, err
	}
	for i := range lines {
		lines[i].Amplitude /= scale
	}
	sd := &SpectrumData{Channel: gc.Channel, Unit: unit, Lines: lines, From: bestAt, To: bestAt + float64(n)/rate, Rate: rate, Samples: n}
	for _, k := range gc.Checks {
		if k.Kind != plan.GridLine {
			continue
		}
		b := SpectrumBand{Check: k.ID, Lo: k.BandLowHz, Hi: k.BandHighHz, Limit: math.NaN(), Failed: k.Verdict == Fail}
		if k.HasLimit {
			b.Limit = k.Limit / scale
		}
		for _, l := range lines {
			if l.Freq >= b.Lo*(1-1e-9) && l.Freq <= b.Hi*(1+1e-9) && l.Amplitude > b.Largest.Amplitude {
				b.Largest = l
			}
		}
		sd.Bands = append(sd.Bands, b)
	}
	return sd, nil
}

// SVG draws the spectrum: amplitude against frequency on a log axis,
// each band shaded up to its limit (dashed), its largest line ringed
// (red when the check failed).
func (s *SpectrumData) SVG() ([]byte, error) {
	if len(s.Lines) < 2 {
		return nil, fmt.Errorf("spectrum of %s: fewer than two lines", s.Channel)
	}
	p := plot.New()
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font.Size = vg.Points(labelFont)
		ax.Tick.Label.Font.Size = vg.Points(minFont)
	}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
	p.X.Label.Text = "frequency (Hz, log scale)"
	p.Y.Label.Text = fmt.Sprintf("line, peak (%s)", s.Unit)
	p.Y.Tick.Marker = timeTicks{} // 1, 2 or 5 × 10ⁿ: about eight labels
	p.X.Min, p.X.Max = s.Lines[0].Freq, s.Lines[len(s.Lines)-1].Freq
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = colGrid, colGrid
	p.Add(g)
	top := 0.0
	for _, l := range s.Lines {
		top = math.Max(top, l.Amplitude)
	}
	for _, b := range s.Bands {
		if !math.IsNaN(b.Limit) {
			top = math.Max(top, b.Limit)
		}
		p.Add(specBand{b})
	}
	xy := make(plotter.XYs, len(s.Lines))
	for i, l := range s.Lines {
		xy[i].X, xy[i].Y = l.Freq, l.Amplitude
	}
	line, err := plotter.NewLine(xy)
	if err != nil {
		return nil, fmt.Errorf("spectrum of %s: %w", s.Channel, err)
	}
	line.Color, line.Width = colMeasured, vg.Points(1)
	p.Add(line)
	for _, b := range s.Bands {
		if b.Largest.Freq <= 0 {
			continue
		}
		sc, err := plotter.NewScatter(plotter.XYs{{X: b.Largest.Freq, Y: b.Largest.Amplitude}})
		if err != nil {
			return nil, fmt.Errorf("spectrum of %s: %w", s.Channel, err)
		}
		col := color.Color(colMark)
		if b.Failed {
			col = colFail
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(4), Shape: draw.RingGlyph{}}
		p.Add(sc)
	}
	p.Y.Min, p.Y.Max = 0, math.Max(top, 1e-9)*(1+axisPad)
	c := vgsvg.New(plotWidth, measuredHeight+20)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("spectrum of %s: %w", s.Channel, err)
	}
	return stripProlog(buf.Bytes()), nil
}

// specBand shades a band from the axis up to its limit and draws the
// limit dashed across it; a band with no limit is shaded to the top.
type specBand struct{ SpectrumBand }

func (b specBand) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	x0 := clampLen(trX(math.Max(b.Lo, p.X.Min)), c.Min.X, c.Max.X)
	x1 := clampLen(trX(math.Min(b.Hi, p.X.Max)), c.Min.X, c.Max.X)
	if x1 <= x0 {
		return
	}
	y1 := c.Max.Y
	if !math.IsNaN(b.Limit) {
		y1 = clampLen(trY(b.Limit), c.Min.Y, c.Max.Y)
	}
	fill := color.Color(colSteady)
	if b.Failed {
		fill = colFailedBand
	}
	c.FillPolygon(fill, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	if !math.IsNaN(b.Limit) {
		c.StrokeLine2(draw.LineStyle{Color: edgeColor(fill), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}, x0, y1, x1, y1)
	}
}

// logTicks labels a log axis at 1, 2 and 5 × 10ⁿ, with unlabelled ticks
// at the other whole multiples.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = fmt.Sprintf("%g", v)
			}
			out = append(out, t)
		}
	}
	return out
}

// gridLegend is the legend under a spectrum.
func spectrumLegend(s *SpectrumData) []legendItem {
	out := []legendItem{{"measured", fmt.Sprintf("spectrum of %s, +%.1f s to +%.1f s", s.Channel, s.From, s.To)}}
	for _, b := range s.Bands {
		class := "steady"
		if b.Failed {
			class = "failed"
		}
		lim := "no limit"
		if !math.IsNaN(b.Limit) {
			lim = "limit " + fmtNum(b.Limit, s.Unit)
		}
		out = append(out, legendItem{class, fmt.Sprintf("%s: %g–%g Hz, %s; largest line %s at %.3g Hz (ringed)",
			b.Check, b.Lo, b.Hi, lim, fmtNum(b.Largest.Amplitude, s.Unit), b.Largest.Freq)})
	}
	return out
}

func spectrumCaption(s *SpectrumData) string {
	return fmt.Sprintf("The record graded worst: %d samples resampled at %g samples/s (%.1f s), mean and linear trend removed, one Hann window, its FFT read bin by bin as lines of peak amplitude (as the grader reads them), from 1/record (%.3g Hz) up to rate ÷ 2.5 (%.3g Hz), the highest frequency the sampling measures.",
		s.Samples, s.Rate, s.To-s.From, s.Lines[0].Freq, s.Lines[len(s.Lines)-1].Freq)
}

// htmlGrid is a grid case's plots for the page.
type htmlGrid struct {
	Case                         *GridCase
	Power, Spectrum, RideThrough *htmlPlot
}

// gridPlots draws the grid section's plots.
func gridPlots(r *Run) ([]htmlGrid, error) {
	var out []htmlGrid
	for i := range r.Grid {
		gc := &r.Grid[i]
		h := htmlGrid{Case: gc}
		if gc.Power != nil {
			svg, err := gc.Power.SVG()
			if err != nil {
				return nil, fmt.Errorf("grid case %s: %w", gc.ID, err)
			}
			h.Power = &htmlPlot{SVG: template.HTML(svg), Legend: legend(gc.Power),
				Caption: caption(gc.Power) + " Each ramp and swing limit is drawn on its check's worst window, found on the samples resampled uniformly as graded; the band starts at the window's first sample and runs for the check's window."}
		}
		if gc.Spectrum != nil {
			svg, err := gc.Spectrum.SVG()
			if err != nil {
				return nil, fmt.Errorf("grid case %s: %w", gc.ID, err)
			}
			h.Spectrum = &htmlPlot{SVG: template.HTML(svg), Legend: spectrumLegend(gc.Spectrum), Caption: spectrumCaption(gc.Spectrum)}
		}
		if gc.RideThrough != nil {
			svg, err := gc.RideThrough.SVG()
			if err != nil {
				return nil, fmt.Errorf("grid case %s: %w", gc.ID, err)
			}
			h.RideThrough = &htmlPlot{SVG: template.HTML(svg), Legend: legend(gc.RideThrough), Caption: rideCaption(gc)}
		}
		out = append(out, h)
	}
	return out, nil
}

// rideCaption says what the ride-through plot draws and what it does
// not: the contract's curve is not in the plan, only the values its
// checks were compiled from.
func rideCaption(gc *GridCase) string {
	var b strings.Builder
	b.WriteString(caption(gc.RideThrough))
	if len(gc.Curve) > 0 {
		var pts []string
		for _, cp := range gc.Curve {
			pts = append(pts, fmt.Sprintf("%g pu for %g s (%s)", cp.VoltagePU, cp.DurationS, cp.Pos))
		}
		b.WriteString(" The contract's ride-through curve (dotted) is read from the values the plan's checks were compiled from, as written: " + strings.Join(pts, ", ") + ". Drawn with it are the dip as the plan's grid_dip step set it and each restores_within check's threshold over its window")
	} else {
		b.WriteString(" The contract's ride-through curve is not in the plan: drawn are the dip as the plan's grid_dip step set it and each restores_within check's threshold over its window")
	}
	var src []string
	for _, k := range gc.Checks {
		if k.Kind == plan.RestoresWithin {
			src = append(src, k.Sources...)
		}
	}
	if len(src) > 0 {
		b.WriteString("; the contract values behind them, as written: " + strings.Join(src, "; "))
	}
	b.WriteString(".")
	return b.String()
}
