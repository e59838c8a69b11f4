package headroom

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/gridsignal"
	"github.com/seamdc/seam/internal/units"
)

// Grid is a grid boundary whose point-of-interconnection meter channel
// headroom reads, with the utility's limits from the contract in W.
type Grid struct {
	Boundary string // the boundary's id, "u1-site"
	Channel  string // the POI meter's channel, "u1/site/power"
	Path     string // boundaries."u1-site".grid
	RatedW   float64
	Ramps    []GridRamp
	// Swing is the largest max − min within SwingWindowS; SwingW 0 when
	// the contract has no swing clause (then the window is 60 s).
	SwingW, SwingWindowS float64
	Swing                string // as written: "20 %"
	Band                 *GridBand
}

// GridRamp is one ramp clause: the largest rise (up) or fall (down)
// within WindowS (1 s for per_second, 60 s for per_minute).
type GridRamp struct {
	Direction string // up, down
	WindowS   float64
	LimitW    float64 // the rate × the window
	Limit     string  // as written: "1 MW/s"
	Path      string  // the clause's path
}

// GridBand is the oscillation clause: its band, the record (window) and
// Welch segment the measures take, and its limits (0: no such limit).
type GridBand struct {
	LowHz, HighHz     float64
	WindowS, SegmentS float64
	LineW, RMSW       float64
	Line, RMS         string // as written: "1 %"
	Path              string
}

// gridsOf are the contracts' grid boundaries that name their POI
// meter's channel: the ones whose figures headroom can measure.
func gridsOf(c *contract.Contracts) []*Grid {
	var out []*Grid
	for _, b := range c.GridBoundaries() {
		g := b.Grid
		if g == nil || g.Channel.To == "" {
			continue
		}
		rated := g.Rated.Canon * 1000
		share := func(q contract.Q) float64 {
			if q.Dim == units.Ratio {
				return milli(q.Canon / 100 * rated)
			}
			return milli(q.Canon * 1000)
		}
		gw := &Grid{Boundary: b.ID, Channel: g.Channel.To, Path: g.Path, RatedW: rated, SwingWindowS: 60}
		for _, r := range []struct {
			dir string
			lim contract.RampLimit
		}{{"up", g.RampUp}, {"down", g.RampDown}} {
			for _, w := range []struct {
				name   string
				q      contract.Q
				window float64
			}{{"per_second", r.lim.PerSecond, 1}, {"per_minute", r.lim.PerMinute, 60}} {
				if w.q.Set && w.q.Canon > 0 {
					gw.Ramps = append(gw.Ramps, GridRamp{Direction: r.dir, WindowS: w.window, LimitW: milli(w.q.Canon * w.window * 1000),
						Limit: w.q.Raw, Path: g.Path + ".require.ramp." + r.dir + "." + w.name})
				}
			}
		}
		if g.Swing.Set && g.SwingWindow.Canon > 0 {
			gw.SwingW, gw.SwingWindowS, gw.Swing = share(g.Swing), g.SwingWindow.Canon, g.Swing.Raw
		}
		if o := g.Oscillation; o != nil && o.Low.Canon > 0 && o.High.Canon > o.Low.Canon && o.Window.Canon >= 1/o.Low.Canon {
			// the segment as contractc vet takes it: a quarter of the
			// window unless stated, and never shorter than 1/low
			seg := o.Window.Canon / 4
			if o.Segment.Set {
				seg = o.Segment.Canon
			}
			bd := &GridBand{LowHz: o.Low.Canon, HighHz: o.High.Canon, WindowS: o.Window.Canon, SegmentS: math.Max(seg, 1/o.Low.Canon),
				Path: g.Path + ".require.oscillation"}
			if o.Line.Set {
				bd.LineW, bd.Line = share(o.Line), o.Line.Raw
			}
			if o.RMS.Set {
				bd.RMSW, bd.RMS = share(o.RMS), o.RMS.Raw
			}
			gw.Band = bd
		}
		out = append(out, gw)
	}
	return out
}

// milli rounds watts to the milliwatt: 5 MW/min × 1 min is 5e6 W, not
// the 5.000000000000001e6 of its canonical kW/s.
func milli(w float64) float64 { return math.Round(w*1000) / 1000 }

// ramp windows every grid exposes, whether or not a clause limits them.
var gridRampWindows = []float64{1, 60}

// span is the trailing record the ramps and the swing are the worst of:
// a minute, or the swing window when longer.
func (g *Grid) span() float64 {
	s := math.Max(60, g.SwingWindowS)
	for _, r := range g.Ramps {
		s = math.Max(s, r.WindowS)
	}
	return s
}

// record is the longest record the figures read, in seconds.
func (g *Grid) record() float64 {
	s := g.span()
	if g.Band != nil {
		s = math.Max(s, g.Band.WindowS)
	}
	return s
}

// CoveredHz is the band's upper edge the poll rate can measure:
// the clause's upper edge, or rate ÷ gridsignal.MinRateFactor when
// lower. 0 when the grid has no oscillation clause.
func (g *Grid) CoveredHz(rate float64) float64 {
	if g.Band == nil {
		return 0
	}
	return math.Min(g.Band.HighHz, rate/gridsignal.MinRateFactor)
}

// GridWatch measures the live grid figures of each Grid from its POI
// meter's readings (the one poller's, through the Collector): it keeps
// each channel's readings for the longest record its figures read and,
// at each Compute, resamples them onto a uniform grid at the poll rate
// (linear between readings) and measures with internal/gridsignal, as
// contractc vet and the grader do. A record is cut at a gap between two
// readings longer than staleAfter, and nothing is measured when the
// newest reading is older than that. It is safe for concurrent use.
type GridWatch struct {
	grids      []*Grid
	rate       float64 // samples per second: the poll rate
	staleAfter time.Duration

	mu    sync.Mutex
	rings map[string]*gridRing // by channel
}

// gridRing is one channel's readings, oldest first, from head.
type gridRing struct {
	at   []int64 // unix nanoseconds
	v    []float64
	head int
	keep int64 // nanoseconds kept before the newest
}

// NewGridWatch watches grids polled every period; a reading older than
// staleAfter is stale.
func NewGridWatch(grids []*Grid, period, staleAfter time.Duration) (*GridWatch, error) {
	if period <= 0 {
		return nil, fmt.Errorf("grid figures: poll period %s: want a positive period", period)
	}
	w := &GridWatch{grids: grids, rate: float64(time.Second) / float64(period), staleAfter: staleAfter, rings: map[string]*gridRing{}}
	for _, g := range grids {
		keep := int64((g.record()+1)*1e9) + int64(period) + int64(staleAfter)
		if r := w.rings[g.Channel]; r == nil || r.keep < keep {
			w.rings[g.Channel] = &gridRing{keep: keep}
		}
	}
	return w, nil
}

// Rate is the poll rate the figures are sampled at, samples/s.
func (w *GridWatch) Rate() float64 { return w.rate }

// Take records a reading of a channel (kW, as every power channel);
// readings of other channels, older than the newest and implausible
// ones are dropped.
func (w *GridWatch) Take(channel string, r Reading) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	g := w.rings[channel]
	if g == nil || !plausible(Power, r.Value) {
		return
	}
	t := r.At.UnixNano()
	if n := len(g.at); n > g.head && t <= g.at[n-1] {
		return
	}
	g.at = append(g.at, t)
	g.v = append(g.v, r.Value*1000)
	// drop what no record reaches: keep one reading before the cut
	cut := t - g.keep
	for g.head+1 < len(g.at) && g.at[g.head+1] <= cut {
		g.head++
	}
	if g.head > 1024 && g.head > len(g.at)/2 {
		n := copy(g.at, g.at[g.head:])
		copy(g.v, g.v[g.head:])
		g.at, g.v, g.head = g.at[:n], g.v[:n], 0
	}
}

// GridResult is a grid's figures at one instant, in W; a Value is not
// OK when its record is not there (stale, cut by a gap, or shorter than
// the figure's window).
type GridResult struct {
	Grid  *Grid
	Power Value // the newest reading
	// Ramps are the largest rise and fall within each of
	// gridRampWindows over the trailing span: [window][0 up, 1 down].
	Ramps [][2]Value
	Swing Value
	// CoveredHz is the band's upper edge measured (Grid.CoveredHz).
	CoveredHz float64
	Line      Value // the largest line's peak amplitude in LowHz..CoveredHz
	LineHz    float64
	RMS       Value // the band RMS in LowHz..CoveredHz
}

// Compute measures every grid's figures at now.
func (w *GridWatch) Compute(now time.Time) []GridResult {
	if w == nil {
		return nil
	}
	out := make([]GridResult, 0, len(w.grids))
	for _, g := range w.grids {
		out = append(out, w.compute(g, now))
	}
	return out
}

func (w *GridWatch) compute(g *Grid, now time.Time) GridResult {
	res := GridResult{Grid: g, Ramps: make([][2]Value, len(gridRampWindows)), CoveredHz: g.CoveredHz(w.rate)}
	bandN := 0
	if g.Band != nil {
		bandN = int(math.Round(g.Band.WindowS * w.rate))
	}
	vals, last, bandReadings, ok := w.resample(g.Channel, int(math.Floor(g.record()*w.rate*(1+1e-9)))+1, bandN, now)
	if !ok {
		return res
	}
	res.Power = val(last)
	s := gridsignal.Series{Rate: w.rate}
	// the ramps and the swing: the worst over the trailing span
	s.Values = tail(vals, int(math.Floor(g.span()*w.rate*(1+1e-9)))+1)
	fits := func(window float64) bool { return float64(len(s.Values)-1) >= math.Floor(window*w.rate*(1+1e-9)) }
	// the swing within a window is the larger of the ramps within it
	// (gridsignal's doc): one pass per distinct window
	ramps := map[float64][2]Value{}
	ramp := func(win float64) [2]Value {
		r, done := ramps[win]
		if !done && fits(win) {
			if up, down, err := gridsignal.Ramp(s, win); err == nil {
				r = [2]Value{val(up.Value), val(down.Value)}
			}
			ramps[win] = r
		}
		return r
	}
	for i, win := range gridRampWindows {
		res.Ramps[i] = ramp(win)
	}
	if sw := ramp(g.SwingWindowS); sw[0].OK {
		res.Swing = val(math.Max(sw[0].V, sw[1].V))
	}
	// the band: one whole window, up to the edge the rate covers
	if b := g.Band; b != nil && res.CoveredHz > b.LowHz {
		n := bandN
		if len(vals) < n || float64(bandReadings) < MinGridReadings*float64(n) {
			return res // not a whole window, or not read at the poll rate
		}
		s.Values = tail(vals, n)
		if b.LineW > 0 {
			if l, err := gridsignal.LargestLine(s, b.LowHz, res.CoveredHz); err == nil {
				res.Line, res.LineHz = val(l.Amplitude), l.Freq
			}
		}
		if b.RMSW > 0 {
			if r, err := gridsignal.BandRMS(s, b.LowHz, res.CoveredHz, b.SegmentS); err == nil {
				res.RMS = val(r)
			}
		}
	}
	return res
}

func tail(v []float64, n int) []float64 {
	if len(v) > n {
		return v[len(v)-n:]
	}
	return v
}

// MinGridReadings is the share of a band window's samples that must be
// readings, not interpolated between them: below it the meter was not
// read at the poll rate and the band is not exported.
const MinGridReadings = 0.9

// resample returns up to n samples at the poll rate ending at the
// channel's newest reading (linear between readings, oldest first),
// stopping at the first reading or at a gap longer than staleAfter, the
// newest reading, and how many readings the last m samples span; ok is
// false when there is none fresh at now.
func (w *GridWatch) resample(channel string, n, m int, now time.Time) (vals []float64, last float64, readings int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	g := w.rings[channel]
	if g == nil || len(g.at) == g.head {
		return nil, 0, 0, false
	}
	at, v := g.at[g.head:], g.v[g.head:]
	end := at[len(at)-1]
	stale := int64(w.staleAfter)
	if now.UnixNano()-end > stale {
		return nil, 0, 0, false
	}
	dt := 1e9 / w.rate
	if m > 0 {
		from := end - int64(math.Round(float64(m-1)*dt)) - int64(dt/2)
		readings = len(at) - sort.Search(len(at), func(i int) bool { return at[i] >= from })
	}
	out := make([]float64, n)
	i := len(at) - 1 // at[i-1] <= t <= at[i]
	k := n - 1
	for ; k >= 0; k-- {
		t := end - int64(math.Round(float64(n-1-k)*dt))
		for i > 0 && at[i-1] > t {
			i--
			if at[i+1]-at[i] > stale {
				return out[k+1:], v[len(v)-1], readings, true
			}
		}
		switch {
		case at[i] == t:
			out[k] = v[i]
		case i == 0 || at[i]-at[i-1] > stale:
			return out[k+1:], v[len(v)-1], readings, true // before the first reading, or in a gap
		default:
			f := float64(t-at[i-1]) / float64(at[i]-at[i-1])
			out[k] = v[i-1] + f*(v[i]-v[i-1])
		}
	}
	return out, v[len(v)-1], readings, true
}

// WatchGrid measures the live grid figures of the model's grid
// boundaries from readings polled every period (the poll's period: the
// band is measured up to 1/(2.5·period) Hz). Without a call the
// collector exports no grid figures.
func (c *Collector) WatchGrid(period time.Duration) error {
	w, err := NewGridWatch(c.model.Grids, period, c.staleAfter)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.grid = w
	c.mu.Unlock()
	return nil
}

var (
	gridLabels     = []string{"boundary", "channel"}
	gridRampLabels = []string{"boundary", "channel", "direction", "window"}
	gridBandLabels = []string{"boundary", "channel", "band_low_hz", "band_high_hz"}

	gridPower     = desc("seam_grid_power_watts", "Site power at the point of interconnection: the POI meter's newest reading.", gridLabels)
	gridRamp      = desc("seam_grid_ramp_watts", "The largest rise (direction up) or fall (down) of site power at the point of interconnection within any `window`, over the trailing minute (the swing window when longer).", gridRampLabels)
	gridRampLimit = desc("seam_grid_ramp_limit_watts", "The grid contract's ramp limit: its rate × the window.", gridRampLabels)
	gridSwing     = desc("seam_grid_swing_watts", "The largest max − min of site power at the point of interconnection within any `window` (the swing clause's), over the trailing minute (the window when longer).", []string{"boundary", "channel", "window"})
	gridSwingLim  = desc("seam_grid_swing_limit_watts", "The grid contract's swing limit.", []string{"boundary", "channel", "window"})
	gridLine      = desc("seam_grid_band_line_watts", "The largest spectral line (peak amplitude) of site power in band_low_hz..band_high_hz over the oscillation clause's window; band_high_hz is the edge the poll rate covers (rate ÷ 2.5).", gridBandLabels)
	gridLineHz    = desc("seam_grid_band_line_frequency_hertz", "The frequency of the largest spectral line in the band.", gridBandLabels)
	gridRMS       = desc("seam_grid_band_rms_watts", "The RMS of site power in band_low_hz..band_high_hz (Welch) over the oscillation clause's window; band_high_hz is the edge the poll rate covers (rate ÷ 2.5).", gridBandLabels)
	gridLineLimit = desc("seam_grid_band_line_limit_watts", "The grid contract's limit on the largest line in its oscillation band.", gridLabels)
	gridRMSLimit  = desc("seam_grid_band_rms_limit_watts", "The grid contract's limit on the band RMS.", gridLabels)
	gridClauseHz  = desc("seam_grid_band_clause_high_hertz", "The upper edge of the grid contract's oscillation band.", gridLabels)
	gridCoveredHz = desc("seam_grid_band_covered_high_hertz", "The upper edge of the band the live figures cover: the clause's, or the poll rate ÷ 2.5 when lower.", gridLabels)
)

func init() {
	descs = append(descs, gridPower, gridRamp, gridRampLimit, gridSwing, gridSwingLim, gridLine, gridLineHz, gridRMS,
		gridLineLimit, gridRMSLimit, gridClauseHz, gridCoveredHz)
}

// hz writes a frequency label: "0.1", "2".
func hz(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

// collectGrid exports the grid figures; limits and band edges always,
// figures only from fresh records.
func collectGrid(ch chan<- prometheus.Metric, w *GridWatch, now time.Time) {
	gauge := func(d *prometheus.Desc, v Value, labels ...string) {
		if v.OK {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v.V, labels...)
		}
	}
	for _, r := range w.Compute(now) {
		g := r.Grid
		l := []string{g.Boundary, g.Channel}
		gauge(gridPower, r.Power, l...)
		for i, win := range gridRampWindows {
			wl := windowLabel(time.Duration(win * float64(time.Second)))
			gauge(gridRamp, r.Ramps[i][0], append(l, "up", wl)...)
			gauge(gridRamp, r.Ramps[i][1], append(l, "down", wl)...)
		}
		for _, rp := range g.Ramps {
			gauge(gridRampLimit, val(rp.LimitW), append(l, rp.Direction, windowLabel(time.Duration(rp.WindowS*float64(time.Second))))...)
		}
		sw := windowLabel(time.Duration(g.SwingWindowS * float64(time.Second)))
		gauge(gridSwing, r.Swing, append(l, sw)...)
		if g.SwingW > 0 {
			gauge(gridSwingLim, val(g.SwingW), append(l, sw)...)
		}
		b := g.Band
		if b == nil {
			continue
		}
		gauge(gridClauseHz, val(b.HighHz), l...)
		gauge(gridCoveredHz, val(r.CoveredHz), l...)
		if b.LineW > 0 {
			gauge(gridLineLimit, val(b.LineW), l...)
		}
		if b.RMSW > 0 {
			gauge(gridRMSLimit, val(b.RMSW), l...)
		}
		bl := append(l, hz(b.LowHz), hz(r.CoveredHz))
		gauge(gridLine, r.Line, bl...)
		gauge(gridLineHz, Value{V: r.LineHz, OK: r.Line.OK}, bl...)
		gauge(gridRMS, r.RMS, bl...)
	}
}

// gridRules are the live grid figures' alerts, one per clause, its
// limit written into the rule from the contract: a ramp or swing
// breach, a line or band RMS above its limit (each page at once: the
// figures are already the worst over their window), and the band's
// coverage short of the clause's upper edge (the meter polled slower
// than 2.5 × the edge).
func gridRules(m *Model, o RuleOptions) []Rule {
	var out []Rule
	for _, g := range m.Grids {
		sel := func(extra string) string {
			return fmt.Sprintf("{boundary=%q%s}", g.Boundary, extra)
		}
		for _, r := range g.Ramps {
			w := windowLabel(time.Duration(r.WindowS * float64(time.Second)))
			verb := "rose"
			if r.Direction == "down" {
				verb = "fell"
			}
			labels := pager("critical")
			labels["direction"], labels["window"] = r.Direction, w // one rule per clause, told apart
			out = append(out, Rule{Alert: "SeamGridRampBreach",
				Expr:   fmt.Sprintf("seam_grid_ramp_watts%s > %s", sel(fmt.Sprintf(",direction=%q,window=%q", r.Direction, w)), num(r.LimitW)),
				Labels: labels,
				Summary: fmt.Sprintf("site power at the point of interconnection (%s) %s {{ $value | humanize }}W within %s, more than the %s the utility allows (%s)",
					g.Boundary, verb, w, r.Limit, r.Path)})
		}
		if g.SwingW > 0 {
			w := windowLabel(time.Duration(g.SwingWindowS * float64(time.Second)))
			out = append(out, Rule{Alert: "SeamGridSwingBreach",
				Expr:   fmt.Sprintf("seam_grid_swing_watts%s > %s", sel(fmt.Sprintf(",window=%q", w)), num(g.SwingW)),
				Labels: pager("critical"),
				Summary: fmt.Sprintf("site power at the point of interconnection (%s) swung {{ $value | humanize }}W within %s, more than the %s the utility allows (%s.require.swing.max)",
					g.Boundary, w, g.Swing, g.Path)})
		}
		b := g.Band
		if b == nil {
			continue
		}
		band := "{{ $labels.band_low_hz }}-{{ $labels.band_high_hz }} Hz"
		if b.LineW > 0 {
			out = append(out, Rule{Alert: "SeamGridOscillationLine",
				Expr:   fmt.Sprintf("seam_grid_band_line_watts%s > %s", sel(""), num(b.LineW)),
				Labels: pager("critical"),
				Summary: fmt.Sprintf("site power at the point of interconnection (%s) oscillates with a line of {{ $value | humanize }}W in %s, above the %s (%sW) the utility allows (%s.line)",
					g.Boundary, band, b.Line, humanW(b.LineW), b.Path)})
		}
		if b.RMSW > 0 {
			out = append(out, Rule{Alert: "SeamGridOscillationRMS",
				Expr:   fmt.Sprintf("seam_grid_band_rms_watts%s > %s", sel(""), num(b.RMSW)),
				Labels: pager("critical"),
				Summary: fmt.Sprintf("site power at the point of interconnection (%s) carries {{ $value | humanize }}W RMS in %s, above the %s (%sW) the utility allows (%s.rms)",
					g.Boundary, band, b.RMS, humanW(b.RMSW), b.Path)})
		}
		out = append(out, Rule{Alert: "SeamGridBandCoverageShort",
			Expr: fmt.Sprintf("seam_grid_band_covered_high_hertz%s < %s", sel(""), num(b.HighHz)), For: promDuration(o.For),
			Labels: pager("warning"),
			Summary: fmt.Sprintf("the live grid figures of %s cover %s-{{ $value }} Hz of the clause's %s-%s Hz: poll %s at least %s times a second (2.5 × %s Hz), or take the band from an analyser",
				g.Boundary, hz(b.LowHz), hz(b.LowHz), hz(b.HighHz), g.Channel, num(gridsignal.MinRateFactor*b.HighHz), hz(b.HighHz))})
	}
	return out
}

// humanW writes watts as Prometheus' humanize does for the figures:
// 65k, 1.3M.
func humanW(v float64) string {
	for _, u := range []struct {
		div float64
		pre string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.div {
			return strconv.FormatFloat(v/u.div, 'g', 4, 64) + u.pre
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
