package report

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/version"
)

//go:embed tmpl/report.html tmpl/report.css
var tmplFS embed.FS

var htmlTmpl = template.Must(template.New("report.html").Funcs(template.FuncMap{
	"upper":        strings.ToUpper,
	"add":          func(a, b int) int { return a + b },
	"stamp":        stamp,
	"duration":     func(c Case) string { return c.Duration().Round(time.Millisecond).String() },
	"caseAnchor":   func(id string) string { return "case-" + anchor(id) },
	"plotAnchor":   func(id string) string { return "plot-" + anchor(id) },
	"verdictClass": func(v string) string { return v },
	"verdict": func(v string) template.HTML {
		return template.HTML(fmt.Sprintf(`<span class="v v-%s">%s</span>`, template.HTMLEscapeString(v), template.HTMLEscapeString(v)))
	},
	"measured": func(c Check) string { return value(c, c.Measured) },
	"limit":    limitText,
	"margin":   func(c Check) string { return value(c, c.Margin) },
	"anchor":   anchor,
	"rate":     func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) },
	"ident":    ident,
	"coverage": coverageWord,
	"ambient": func(a results.Ambient) string {
		return strings.TrimSpace(strconv.FormatFloat(*a.Value, 'g', 4, 64) + " " + a.Unit)
	},
	"cxtag":       cxTagHTML,
	"contractSig": SignatureHTML,
	"sideOf":      sideWords,
}).ParseFS(tmplFS, "tmpl/report.html"))

// hexColour is a tag colour the page may write into a style attribute.
var hexColour = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// cxTagHTML is a commissioning level's tag: its name on its colour,
// with black or white text, whichever reads on it. A colour that is
// not #rrggbb (the plan's schema refuses one) is drawn grey.
func cxTagHTML(t CxTag) template.HTML {
	colour := strings.ToLower(t.Colour)
	if !hexColour.MatchString(colour) {
		colour = "#6b7280"
	}
	ink := "#fff"
	if luminance(colour) > 0.45 {
		ink = "#111"
	}
	return template.HTML(fmt.Sprintf(`<span class="cx" style="background:%s;color:%s" title="commissioning level">%s</span>`,
		colour, ink, template.HTMLEscapeString(t.Label())))
}

// luminance is the relative luminance of a #rrggbb colour (WCAG 2).
func luminance(colour string) float64 {
	v, _ := strconv.ParseUint(colour[1:], 16, 32)
	lin := func(c uint64) float64 {
		f := float64(c) / 255
		if f <= 0.03928 {
			return f / 12.92
		}
		return math.Pow((f+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(v>>16&0xff) + 0.7152*lin(v>>8&0xff) + 0.0722*lin(v&0xff)
}

// SignatureHTML is a party's signature on the contracts in words:
// signed with the key and date, stale (over an earlier version),
// invalid, or missing (the report's sign-off page and the handover
// record say it alike).
func SignatureHTML(s *plan.Signature) template.HTML {
	if s == nil {
		return ""
	}
	words := map[string]string{"signed": "signed", "stale": "stale: signed an earlier version", "invalid": "invalid: the signature does not hold", "missing": "missing: not signed"}[s.Status]
	if words == "" {
		words = s.Status
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<span class="sig sig-%s">%s</span>`, anchor(s.Status), template.HTMLEscapeString(words))
	if s.Key != "" {
		fmt.Fprintf(&b, `<br>key <span class="digest">%s</span>`, template.HTMLEscapeString(s.Key))
	}
	if s.SignedAt != "" {
		fmt.Fprintf(&b, `<br>on %s`, template.HTMLEscapeString(s.SignedAt))
	}
	return template.HTML(b.String())
}

// sideWords says which side of its boundary a party signs for.
func sideWords(side, boundary string) string {
	switch side {
	case SideOther:
		return "party to " + boundary
	case "":
		return ""
	}
	return side + " of " + boundary
}

type htmlPage struct {
	Title   string
	Version string
	CSS     template.CSS
	Run     *Run
	Counts  Counts
	Tallies []tally
	Failed  []failed
	Plots   []*htmlPlot // by case index; nil where a case has no plot
	// CapturePlots are by capture index (capture_html.go).
	CapturePlots []*htmlPlot
	// Grid is the grid section: its cases' plots (gridplot.go) and the
	// interconnection summary.
	Grid        []htmlGrid
	GridSummary *GridSummary
	// Levels count the cases per commissioning level, beside Tallies.
	Levels []LevelGroup
}

type tally struct {
	By     string
	Groups []Group
}

type failed struct {
	Case   *Case
	Checks []Check
}

type htmlPlot struct {
	SVG     template.HTML
	Legend  []legendItem
	Caption string
}

// legendItem is a swatch under a plot: the HTML draws the legend so
// that it never covers the data.
type legendItem struct {
	Class, Label string
}

func legend(p *PlotData) []legendItem {
	out := []legendItem{{"measured", "measured " + p.Channel}}
	seen := map[string]bool{}
	failed := false
	for _, b := range p.Bands {
		failed = failed || b.Failed
		if b.Label == "" || seen[b.Label] {
			continue
		}
		seen[b.Label] = true
		class := "steady"
		switch {
		case b.Failed:
			class = "failed"
		case b.Envelope:
			class = "envelope"
		}
		out = append(out, legendItem{class, b.Label})
	}
	if failed {
		out = append(out, legendItem{"outside", "samples outside a failed limit"})
	}
	for _, c := range p.Commanded {
		out = append(out, legendItem{"commanded", c.Label + " (lower axis)"})
	}
	for _, c := range p.Curves {
		out = append(out, legendItem{"curve", c.Label + " (lower axis)"})
	}
	if p.ExcitationChannel != "" {
		out = append(out, legendItem{"excitation", "measured " + p.ExcitationChannel + " (lower axis)"})
	}
	return out
}

// simPageCSS marks every printed page of a simulated run in the page's
// top margin (a page-margin box: Chromium prints them since version 131).
const simPageCSS = `
@page { @top-right { content: "SIMULATED — a rehearsal, not evidence from equipment"; font: 700 9pt "Liberation Sans", Arial, sans-serif; color: #c62828; } }
`

// HTML writes the report as one self-contained page: inline CSS and SVG,
// no script, no fetch, so it opens offline and prints as it shows.
func HTML(w io.Writer, r *Run) error {
	css, err := tmplFS.ReadFile("tmpl/report.css")
	if err != nil {
		return err
	}
	if r.Sim != "" {
		css = append(css, simPageCSS...)
	}
	page := htmlPage{
		Title:   title(r),
		Version: version.Version,
		CSS:     template.CSS(css),
		Run:     r,
		Tallies: []tally{
			{"level", Tally(r.Cases, func(c *Case) string { return c.Level })},
			{"module", Tally(r.Cases, func(c *Case) string { return c.Module })},
			{"boundary", Tally(r.Cases, func(c *Case) string { return c.Boundary })},
		},
		Plots:  make([]*htmlPlot, len(r.Cases)),
		Levels: r.LevelTally(),
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		page.Counts.Add(c.Verdict)
		if c.Verdict != Pass {
			page.Failed = append(page.Failed, failed{c, failingChecks(c)})
		}
		if c.Plot == nil {
			continue
		}
		svg, err := c.Plot.SVG()
		if err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		page.Plots[i] = &htmlPlot{SVG: template.HTML(svg), Legend: legend(c.Plot), Caption: caption(c.Plot)}
	}
	if page.CapturePlots, err = capturePlots(r); err != nil {
		return err
	}
	if page.Grid, err = gridPlots(r); err != nil {
		return err
	}
	page.GridSummary = r.GridSummary()
	if err := htmlTmpl.Execute(w, page); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return nil
}

// title is the page's title, which a printed PDF keeps as its Title:
// a simulated run's starts with SIMULATED.
func title(r *Run) string {
	level := strings.ToUpper(r.Level)
	if level == "" || level == "ALL" {
		level = "FAT/SAT/IST"
	}
	t := fmt.Sprintf("%s evidence report: site %s", level, r.Site)
	if r.Module != "" {
		t += ", module " + r.Module
	}
	if r.Sim != "" {
		t = "SIMULATED " + t
	}
	return t
}

// ident writes a dotted name (a case id, a clause's path) so that a
// narrow column breaks it after a dot, never inside a part: each part
// with its dot is kept whole, a break opportunity after each.
func ident(id string) template.HTML {
	parts := strings.SplitAfter(id, ".")
	var b strings.Builder
	for i, p := range parts {
		if p == "" {
			continue
		}
		if i > 0 {
			b.WriteString("<wbr>")
		}
		b.WriteString(`<span class="seg">`)
		b.WriteString(template.HTMLEscapeString(p))
		b.WriteString("</span>")
	}
	return template.HTML(b.String())
}

// coverageWord is a coverage status in words.
func coverageWord(status string) string {
	switch status {
	case "not_at_level":
		return "not at this level"
	case "untestable":
		return "untestable here"
	}
	return strings.ReplaceAll(status, "_", " ")
}

func failingChecks(c *Case) []Check {
	var out []Check
	for _, k := range c.Checks {
		if k.Verdict != Pass {
			out = append(out, k)
		}
	}
	return out
}

func caption(p *PlotData) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d samples of %s", p.Samples, p.Channel)
	if len(p.Measured) < p.Samples {
		fmt.Fprintf(&b, ", drawn as %d points that keep the first, lowest, highest and last sample of each interval", len(p.Measured))
	}
	hi, lo := p.Measured[0], p.Measured[0]
	for _, pt := range p.Measured {
		if pt.V > hi.V {
			hi = pt
		}
		if pt.V < lo.V {
			lo = pt
		}
	}
	fmt.Fprintf(&b, "; the axis takes every sample: highest %s at +%.1f s, lowest %s at +%.1f s", fmtNum(hi.V, p.Unit), hi.T, fmtNum(lo.V, p.Unit), lo.T)
	if p.BadQuality > 0 {
		fmt.Fprintf(&b, "; %d samples of bad quality not drawn", p.BadQuality)
	}
	b.WriteString(".")
	return b.String()
}

// anchor makes an id usable as an HTML fragment.
func anchor(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, id)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// value formats a check's number with its unit, or a dash.
func value(c Check, v float64) string {
	if !c.HasValue || math.IsNaN(v) {
		return "—"
	}
	return fmtNum(v, c.Unit)
}

func limitText(c Check) string {
	if !c.HasLimit {
		return "—"
	}
	return fmtNum(c.Limit, c.Unit)
}

func fmtNum(v float64, unit string) string {
	s := fmt.Sprintf("%.4g", v)
	if math.Abs(v) >= 1e4 {
		s = fmt.Sprintf("%.0f", v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
