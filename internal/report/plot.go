package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// PlotData is what one case's plot shows: the measured channel against
// the case's bands and envelopes, and the excitation below it on its own
// axis, both over seconds since the case started.
type PlotData struct {
	Channel, Unit string
	Measured      []Point // decimated (see Decimator)
	Samples       int     // raw samples behind Measured
	BadQuality    int     // samples not plotted because their quality was not good

	ExcitationChannel, ExcitationUnit string
	Excitation                        []Point
	// ExcitationLabel names the lower axis ("": load, in its unit).
	ExcitationLabel string
	// Commanded is each load bank's setpoint as the case's program
	// commanded it, in kW, drawn dashed on the lower axis.
	Commanded []Series
	// Curves are limits drawn on the lower axis, dotted in the
	// envelope's colour: a contract's ride-through curve.
	Curves []Series

	Bands    []Band
	Marks    []Mark
	Duration float64 // seconds: the x axis runs from 0 to Duration
	XLabel   string  // the time axis's label ("" : time since the case started)
}

// Series is a named line.
type Series struct {
	Label  string
	Points []Point
}

// Band is a region the measured value must stay in from From to To
// (seconds): a steady band, or a transient envelope (reference ±
// maximum deviation). Lo or Hi is infinite for a one-sided limit.
type Band struct {
	Label    string
	From, To float64
	Lo, Hi   float64
	Envelope bool
	Failed   bool
	// Loose keeps the band's limits out of the value axis's range: a
	// grid limit that passed by far would flatten the waveform, so the
	// band is shaded to the axis's edge (the legend gives the limit).
	Loose bool
}

// Contains reports whether v at t is inside the band, or t is outside
// the band's time.
func (b Band) Contains(t, v float64) bool {
	return t < b.From || t > b.To || (v >= b.Lo && v <= b.Hi)
}

// Mark is a moment on the time axis: a load edge, an injected fault, the
// time a response recovered, a deadline.
type Mark struct {
	At     float64
	Label  string
	Failed bool
}

// Plot sizes, in points; the HTML scales them to the page. The width is
// no more than an A4 page's printable width (210 mm less 2 × 14 mm of
// margin, 516 pt), so printing never shrinks a plot, and no text is
// smaller than minFont: at least 8 pt on paper.
const (
	plotWidth      = 510
	measuredHeight = 180
	exciteHeight   = 100
	printWidth     = 516
	minFont        = 8
	labelFont      = 9
)

var (
	colMeasured   = color.RGBA{R: 0x1f, G: 0x4e, B: 0x9a, A: 0xff}
	colExcitation = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	colCommanded  = color.RGBA{R: 0x8e, G: 0x44, B: 0xad, A: 0xff}
	colCurve      = color.RGBA{R: 0xe0, G: 0x7b, B: 0x00, A: 0xff}
	colSteady     = color.NRGBA{R: 0x2e, G: 0x9d, B: 0x4f, A: 0x33}
	colEnvelope   = color.NRGBA{R: 0xf0, G: 0x9a, B: 0x1a, A: 0x33}
	colFailedBand = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0x22}
	colFail       = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colMark       = color.RGBA{R: 0x44, G: 0x44, B: 0x44, A: 0xff}
	colGrid       = color.RGBA{R: 0xcc, G: 0xcc, B: 0xcc, A: 0xff}
)

// SVG draws the plot with gonum/plot's SVG backend and returns the <svg>
// element alone, ready to inline in HTML (no XML prolog).
func (d *PlotData) SVG() ([]byte, error) {
	l, err := d.layout()
	if err != nil {
		return nil, err
	}
	c := vgsvg.New(plotWidth, l.height)
	l.draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot of %s: %w", d.Channel, err)
	}
	return stripProlog(buf.Bytes()), nil
}

// Box is a rectangle on the plot's canvas, in points from its bottom
// left corner.
type Box struct{ X0, Y0, X1, Y1 float64 }

// Overlaps reports whether the boxes share more than an edge.
func (b Box) Overlaps(o Box) bool {
	return b.X0 < o.X1 && o.X0 < b.X1 && b.Y0 < o.Y1 && o.Y0 < b.Y1
}

// LabelBox is where a mark's label is drawn.
type LabelBox struct {
	Mark
	Box
	Row   int
	Right bool // drawn to the left of its line, right-aligned
}

// plotLayout is where everything of a plot goes: the stacked axes, the
// strip above the measured axis that holds the marks' labels (so that
// a label never covers a sample or a band), each label's box and each
// band's shaded box.
type plotLayout struct {
	height   vg.Length
	plots    []*plot.Plot
	canvases []draw.Canvas // each plot's, cropped so the data areas align
	data     draw.Canvas   // the measured axis's data area
	labels   []LabelBox
	bands    []Box
}

// Label rows: the strip above the measured axis holds rows of labels
// rowHeight apart; labels on a row keep labelGap apart.
const (
	rowHeight = 11
	labelGap  = 4
	stripPad  = 3
)

// layout places the plot's axes, labels and bands.
func (d *PlotData) layout() (*plotLayout, error) {
	if len(d.Measured) == 0 {
		return nil, fmt.Errorf("plot of %s: no samples", d.Channel)
	}
	top, err := d.measuredPlot()
	if err != nil {
		return nil, err
	}
	l := &plotLayout{plots: []*plot.Plot{top}}
	heights := []vg.Length{measuredHeight}
	if len(d.Excitation) > 0 || len(d.Commanded) > 0 {
		bottom, err := d.excitationPlot()
		if err != nil {
			return nil, err
		}
		l.plots, heights = append(l.plots, bottom), append(heights, exciteHeight)
	} else {
		top.X.Label.Text = "time since the case started (s)"
		if d.XLabel != "" {
			top.X.Label.Text = d.XLabel
		}
	}
	var total vg.Length
	for _, h := range heights {
		total += h
	}
	// the data areas' left and right edges do not depend on the height:
	// place the labels on them, then make room for the rows they take
	probe := align(l.plots, heights, draw.New(vgsvg.New(plotWidth, total)))
	left, right := probe[0].data.Min.X, probe[0].data.Max.X
	l.labels = placeLabels(d.Marks, d.Duration, float64(left), float64(right))
	rows := 0
	for _, lb := range l.labels {
		rows = max(rows, lb.Row+1)
	}
	strip := vg.Length(0)
	if rows > 0 {
		strip = vg.Length(rows*rowHeight + stripPad)
	}
	l.height = total + strip
	full := draw.New(vgsvg.New(plotWidth, l.height))
	full.Max.Y -= strip
	aligned := align(l.plots, heights, full)
	for _, a := range aligned {
		l.canvases = append(l.canvases, a.canvas)
	}
	l.data = aligned[0].data
	base := float64(l.data.Max.Y) + stripPad
	for i := range l.labels {
		lb := &l.labels[i]
		lb.Y0 = base + float64(lb.Row*rowHeight)
		lb.Y1 = lb.Y0 + float64(labelStyle(false).Height(lb.Label))
	}
	for _, b := range d.Bands {
		if bx, ok := (bandPlotter{b}).rect(l.data, top); ok {
			l.bands = append(l.bands, Box{float64(bx.Min.X), float64(bx.Min.Y), float64(bx.Max.X), float64(bx.Max.Y)})
		}
	}
	return l, nil
}

func (l *plotLayout) draw(dc draw.Canvas) {
	for i, p := range l.plots {
		c := l.canvases[i]
		c.Canvas = dc.Canvas
		p.Draw(c)
	}
	for _, lb := range l.labels {
		sty := labelStyle(lb.Failed)
		x := vg.Length(lb.X0)
		if lb.Right {
			sty.XAlign, x = draw.XRight, vg.Length(lb.X1)
		}
		dc.FillText(sty, vg.Point{X: x, Y: vg.Length(lb.Y0)}, lb.Label)
	}
}

func labelStyle(failed bool) draw.TextStyle {
	col := color.Color(colMark)
	if failed {
		col = colFail
	}
	return draw.TextStyle{Color: col, Font: font.From(labelFace, vg.Points(minFont)), Handler: plot.DefaultTextHandler,
		XAlign: draw.XLeft, YAlign: draw.YBottom}
}

// labelFace is the labels' typeface: the page draws the plot's texts in
// Liberation Sans (report.css), so their widths are measured in it.
var labelFace = font.Font{Typeface: "Liberation", Variant: "Sans"}

type aligned struct{ canvas, data draw.Canvas }

// align stacks the plots one above the other, the given heights, and
// crops each one's canvas so that their data areas line up left and
// right and the time axes match.
func align(plots []*plot.Plot, heights []vg.Length, dc draw.Canvas) []aligned {
	canvases := make([]draw.Canvas, len(plots))
	top := dc.Max.Y
	for i, h := range heights {
		c := dc
		c.Max.Y, c.Min.Y = top, top-h
		canvases[i] = c
		top -= h
	}
	var left, right vg.Length
	for i, p := range plots {
		data := p.DataCanvas(canvases[i])
		left = max(left, data.Min.X-canvases[i].Min.X)
		right = max(right, canvases[i].Max.X-data.Max.X)
	}
	out := make([]aligned, len(plots))
	for i, p := range plots {
		data := p.DataCanvas(canvases[i])
		c := draw.Crop(canvases[i], left-(data.Min.X-canvases[i].Min.X), -(right - (canvases[i].Max.X - data.Max.X)), 0, 0)
		out[i] = aligned{c, p.DataCanvas(c)}
	}
	return out
}

func (d *PlotData) measuredPlot() (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("%s (%s)", d.Channel, d.Unit), d.Duration)
	for _, b := range d.Bands {
		p.Add(bandPlotter{b})
	}
	line, err := plotter.NewLine(xys(d.Measured))
	if err != nil {
		return nil, fmt.Errorf("plot of %s: %w", d.Channel, err)
	}
	line.Color, line.Width = colMeasured, vg.Points(1)
	p.Add(line)
	if out := d.outside(); len(out) > 0 {
		sc, err := plotter.NewScatter(xys(out))
		if err != nil {
			return nil, fmt.Errorf("plot of %s: %w", d.Channel, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: colFail, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
		p.Add(sc)
	}
	for _, m := range d.Marks {
		p.Add(markPlotter{m})
	}
	var vals []float64
	for _, pt := range d.Measured {
		vals = append(vals, pt.V)
	}
	for _, b := range d.Bands {
		for _, v := range []float64{b.Lo, b.Hi} {
			if !math.IsInf(v, 0) && !b.Loose {
				vals = append(vals, v)
			}
		}
	}
	p.Y.Min, p.Y.Max = axisRange(vals)
	return p, nil
}

// axisPad is the share of the data's span left free above its highest
// and below its lowest value, so that an excursion's peak is drawn
// inside the axis, never on its edge where it reads as cut off.
const axisPad = 0.06

// axisRange is a value axis that takes every value given: every
// sample, every finite limit, with axisPad of the span to spare on each
// side.
func axisRange(vals []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if lo > hi {
		return 0, 1
	}
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi)*0.02, 1)
	}
	return lo - axisPad*span, hi + axisPad*span
}

// placeLabels lays the marks' labels out in rows above the data area,
// which runs from left to right (points) over the duration: each label
// starts at its mark's line, or ends there when it would run past the
// right edge, and goes on the lowest row where it overlaps no label
// before it. Widths are the typeface's own. The rows' heights are set
// by layout.
func placeLabels(marks []Mark, duration, left, right float64) []LabelBox {
	perS := (right - left) / math.Max(duration, 1e-3)
	order := make([]int, 0, len(marks))
	for i, m := range marks {
		if m.Label != "" {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return marks[order[a]].At < marks[order[b]].At })
	var rows [][]Box
	var out []LabelBox
	for _, i := range order {
		m := marks[i]
		x := left + math.Max(0, math.Min(m.At, duration))*perS
		w := float64(labelStyle(false).Width(m.Label))
		lb := LabelBox{Mark: m, Box: Box{X0: x + 2, X1: x + 2 + w}}
		if lb.X1 > plotWidth-2 {
			lb.Box, lb.Right = Box{X0: x - 2 - w, X1: x - 2}, true
		}
		if lb.X0 < 0 { // wider than the room either side: from the left edge
			lb.Box, lb.Right = Box{X0: 0, X1: w}, false
		}
		row := 0
		for ; row < len(rows); row++ {
			free := true
			for _, o := range rows[row] {
				if lb.X0 < o.X1+labelGap && o.X0 < lb.X1+labelGap {
					free = false
					break
				}
			}
			if free {
				break
			}
		}
		if row == len(rows) {
			rows = append(rows, nil)
		}
		rows[row] = append(rows[row], lb.Box)
		lb.Row = row
		out = append(out, lb)
	}
	return out
}

// excitationPlot is the lower axis: the load each bank was commanded
// to (dashed) and the measured excitation channel, when the case samples
// one, in their own unit.
func (d *PlotData) excitationPlot() (*plot.Plot, error) {
	unit := d.ExcitationUnit
	if unit == "" || len(d.Commanded) > 0 && unit == "value" {
		unit = "kW"
	}
	ylabel := fmt.Sprintf("load (%s)", unit)
	if d.ExcitationLabel != "" {
		ylabel = d.ExcitationLabel
	}
	p := newPlot(ylabel, d.Duration)
	p.X.Label.Text = "time since the case started (s)"
	if d.XLabel != "" {
		p.X.Label.Text = d.XLabel
	}
	for _, c := range d.Curves {
		line, err := plotter.NewLine(xys(c.Points))
		if err != nil {
			return nil, fmt.Errorf("plot of %s: %w", c.Label, err)
		}
		line.Color, line.Width, line.Dashes = colCurve, vg.Points(1.5), []vg.Length{vg.Points(1.5), vg.Points(1.5)}
		p.Add(line)
	}
	for _, c := range d.Commanded {
		line, err := plotter.NewLine(xys(c.Points))
		if err != nil {
			return nil, fmt.Errorf("plot of %s: %w", c.Label, err)
		}
		line.Color, line.Width, line.Dashes = colCommanded, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(line)
	}
	if len(d.Excitation) > 0 {
		line, err := plotter.NewLine(xys(d.Excitation))
		if err != nil {
			return nil, fmt.Errorf("plot of %s: %w", d.ExcitationChannel, err)
		}
		line.Color, line.Width = colExcitation, vg.Points(1)
		p.Add(line)
	}
	for _, m := range d.Marks {
		p.Add(markPlotter{Mark{At: m.At, Failed: m.Failed}})
	}
	var vals []float64
	for _, pt := range d.Excitation {
		vals = append(vals, pt.V)
	}
	for _, c := range append(append([]Series{}, d.Commanded...), d.Curves...) {
		for _, pt := range c.Points {
			vals = append(vals, pt.V)
		}
	}
	p.Y.Min, p.Y.Max = axisRange(vals)
	return p, nil
}

func newPlot(ylabel string, duration float64) *plot.Plot {
	p := plot.New()
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font.Size = vg.Points(labelFont)
		ax.Tick.Label.Font.Size = vg.Points(minFont)
	}
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max = 0, math.Max(duration, 1e-3)
	p.X.Tick.Marker = timeTicks{}
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = colGrid, colGrid
	p.Add(g)
	return p
}

// outside returns the measured points outside a failed band.
func (d *PlotData) outside() []Point {
	var out []Point
	for _, pt := range d.Measured {
		for _, b := range d.Bands {
			if b.Failed && !b.Contains(pt.T, pt.V) {
				out = append(out, pt)
				break
			}
		}
	}
	return out
}

func xys(ps []Point) plotter.XYs {
	out := make(plotter.XYs, len(ps))
	for i, p := range ps {
		out[i].X, out[i].Y = p.T, p.V
	}
	return out
}

func stripProlog(svg []byte) []byte {
	if i := bytes.Index(svg, []byte("<svg")); i > 0 {
		svg = svg[i:]
	}
	return bytes.TrimSpace(svg)
}

// bandPlotter shades a band over its time; an open side runs to the
// edge of the data area. Its finite limits count in the axis range, so
// a limit is always in view.
type bandPlotter struct{ Band }

func (b bandPlotter) fill() color.Color {
	switch {
	case b.Failed:
		return colFailedBand
	case b.Envelope:
		return colEnvelope
	}
	return colSteady
}

// rect is the band's shaded box in the data area c.
func (b bandPlotter) rect(c draw.Canvas, p *plot.Plot) (vg.Rectangle, bool) {
	trX, trY := p.Transforms(&c)
	x0, x1 := clampLen(trX(b.From), c.Min.X, c.Max.X), clampLen(trX(b.To), c.Min.X, c.Max.X)
	y0, y1 := c.Min.Y, c.Max.Y
	if !math.IsInf(b.Lo, 0) {
		y0 = clampLen(trY(b.Lo), c.Min.Y, c.Max.Y)
	}
	if !math.IsInf(b.Hi, 0) {
		y1 = clampLen(trY(b.Hi), c.Min.Y, c.Max.Y)
	}
	r := vg.Rectangle{Min: vg.Point{X: x0, Y: y0}, Max: vg.Point{X: x1, Y: y1}}
	return r, x1 > x0 && y1 > y0
}

func (b bandPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	r, ok := b.rect(c, p)
	if !ok {
		return
	}
	x0, y0, x1, y1 := r.Min.X, r.Min.Y, r.Max.X, r.Max.Y
	c.FillPolygon(b.fill(), []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	edge := draw.LineStyle{Color: edgeColor(b.fill()), Width: vg.Points(0.75), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
	if !math.IsInf(b.Lo, 0) && y0 > c.Min.Y {
		c.StrokeLine2(edge, x0, y0, x1, y0)
	}
	if !math.IsInf(b.Hi, 0) && y1 < c.Max.Y {
		c.StrokeLine2(edge, x0, y1, x1, y1)
	}
}

func (b bandPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	lo, hi := b.Lo, b.Hi
	if math.IsInf(lo, 0) {
		lo = hi
	}
	if math.IsInf(hi, 0) {
		hi = lo
	}
	if math.IsInf(lo, 0) { // open on both sides: no limit to show
		return math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	}
	return b.From, b.To, lo, hi
}

func edgeColor(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.RGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 0xff}
}

// markPlotter draws a vertical line across the data area at a moment;
// its label goes in the strip above the data area (layout).
type markPlotter struct{ Mark }

func (m markPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(m.At)
	if x < c.Min.X || x > c.Max.X {
		return
	}
	col := color.Color(colMark)
	if m.Failed {
		col = colFail
	}
	c.StrokeLine2(draw.LineStyle{Color: col, Width: vg.Points(0.75), Dashes: []vg.Length{vg.Points(1), vg.Points(2)}}, x, c.Min.Y, x, c.Max.Y)
}

// timeTicks marks the time axis every 1, 2 or 5 × 10ⁿ seconds, about
// eight labels across (gonum's default gives two or three on long runs).
type timeTicks struct{}

func (timeTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if span <= 0 {
		return []plot.Tick{{Value: lo, Label: fmt.Sprintf("%g", lo)}}
	}
	step := math.Pow(10, math.Floor(math.Log10(span/8)))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(step*m) <= 8 {
			step *= m
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/(step/5)) * step / 5; v <= hi+step*1e-9; v += step / 5 {
		v = math.Round(v/(step/5)) * step / 5
		t := plot.Tick{Value: v}
		if r := math.Mod(math.Abs(v)+step*1e-9, step); r < step*1e-6 {
			t.Label = fmt.Sprintf("%.6g", v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

func clampLen(v, lo, hi vg.Length) vg.Length { return max(lo, min(hi, v)) }
