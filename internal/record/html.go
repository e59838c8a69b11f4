package record

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/report"
)

//go:embed tmpl/record.html tmpl/record.css
var tmplFS embed.FS

var page = template.Must(template.New("record.html").Funcs(template.FuncMap{
	"stamp":   stamp,
	"tag":     tag,
	"verdict": verdict,
	"counts":  counts,
	"join":    strings.Join,
	"sig":     func(s plan.Signature) template.HTML { return report.SignatureHTML(&s) },
	"anchor":  anchor,
	"gate":    gateWord,
	"open":    openWords,
}).ParseFS(tmplFS, "tmpl/record.html"))

// HTML writes the record's page: a cover (the site, when, how to
// verify, every gate and every bundle), then one section per module
// with a table per level, its waivers and its contracts. It needs
// nothing from outside the file and prints on A4.
func HTML(w io.Writer, r *Record) error {
	css, err := tmplFS.ReadFile("tmpl/record.css")
	if err != nil {
		return err
	}
	v := view{Record: r, CSS: template.CSS(css), Matrix: matrixOf(r)}
	for _, m := range r.Modules {
		for _, l := range m.Levels {
			for _, is := range l.Issues {
				v.Issues++
				switch is.Status {
				case "open":
					v.Open++
				case "waived":
					v.Waived++
				default:
					v.Closed++
				}
			}
		}
	}
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("record.html: %w", err)
	}
	return nil
}

type view struct {
	*Record
	CSS                          template.CSS
	Matrix                       matrix
	Issues, Open, Closed, Waived int
}

// matrix is every module's gates by level, for the cover.
type matrix struct {
	Levels []plan.CxLevel
	Rows   []matrixRow
}

type matrixRow struct {
	Module string
	Cells  []*Level // nil: the module has no such level
}

func matrixOf(r *Record) matrix {
	var mx matrix
	seen := map[string]bool{}
	for _, m := range r.Modules {
		for _, l := range m.Levels {
			if !seen[l.ID] {
				seen[l.ID] = true
				mx.Levels = append(mx.Levels, plan.CxLevel{ID: l.ID, Name: l.Name, Colour: l.Colour})
			}
		}
	}
	for _, m := range r.Modules {
		row := matrixRow{Module: m.Name, Cells: make([]*Level, len(mx.Levels))}
		for i, lv := range mx.Levels {
			for j := range m.Levels {
				if m.Levels[j].ID == lv.ID {
					row.Cells[i] = &m.Levels[j]
				}
			}
		}
		mx.Rows = append(mx.Rows, row)
	}
	return mx
}

// hexColour is a level colour the page may write into a style attribute.
var hexColour = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// tag is a level's tag: its id and name on its colour, with black or
// white text, whichever reads on it; grey for a colour not #rrggbb.
func tag(id, name, colour string) template.HTML {
	colour = strings.ToLower(colour)
	if !hexColour.MatchString(colour) {
		colour = "#6b7280"
	}
	ink := "#fff"
	if luminance(colour) > 0.45 {
		ink = "#111"
	}
	label := id
	if name != "" {
		label += " " + name
	}
	return template.HTML(fmt.Sprintf(`<span class="cx" style="background:%s;color:%s">%s</span>`, colour, ink, template.HTMLEscapeString(label)))
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

// verdict is an outcome or status as a badge.
func verdict(v string) template.HTML {
	e := template.HTMLEscapeString(v)
	return template.HTML(fmt.Sprintf(`<span class="v v-%s">%s</span>`, anchor(v), e))
}

// outcomes is the order cases are counted in.
var outcomes = []string{string(grade.Pass), string(grade.Fail), string(grade.Error), string(grade.Aborted), string(grade.Skipped)}

// counts writes cases by outcome: "3 PASS, 1 FAIL".
func counts(c map[string]int) string {
	var parts []string
	for _, o := range outcomes {
		if n := c[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, o))
		}
	}
	var other []string
	for o := range c {
		if !contains(outcomes, o) {
			other = append(other, o)
		}
	}
	sort.Strings(other)
	for _, o := range other {
		parts = append(parts, fmt.Sprintf("%d %s", c[o], o))
	}
	return strings.Join(parts, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// gateWord is a gate's verdict.
func gateWord(g *Gate) string {
	switch {
	case g == nil:
		return "no gate"
	case g.Pass:
		return "PASSES"
	}
	return "REFUSES"
}

// openWords are a gate's open issues by severity, worst first.
func openWords(open map[string][]string) string {
	var parts []string
	for _, sev := range plan.Severities {
		if ids := open[sev]; len(ids) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(ids), sev, strings.Join(ids, ", ")))
		}
	}
	return strings.Join(parts, "; ")
}

var notAnchor = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// anchor makes s safe as an id or a class name.
func anchor(s string) string { return notAnchor.ReplaceAllString(s, "_") }

// stamp is how the record's page writes a time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
