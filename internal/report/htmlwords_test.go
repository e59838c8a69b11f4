package report

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/plan"
)

// The page says things in words: a simulated run's title (which the
// PDF keeps as its Title) starts with SIMULATED and its start and
// finish say they are the simulated site's time; a coverage status is
// words, never not_at_level; so are a case's commissioning level and a
// party's signature on the contracts; case ids and clause paths break
// only after a dot. A run on a real site says none of the simulated
// words.
func TestHTMLSaysItInWords(t *testing.T) {
	var sim *Run
	for _, r := range excursionReports(t) {
		if r.Level == "ist" {
			sim = r
		}
	}
	require.NotNil(t, sim)
	require.NotEmpty(t, sim.Sim)
	real := *sim
	real.Sim = ""
	real.Coverage = append(append([]CoverageRow(nil), sim.Coverage...), CoverageRow{Clause: `boundaries."p1-ma".steady."voltage-a"`, Status: plan.NotAtLevel})
	for _, tt := range []struct {
		name string
		r    *Run
	}{{"simulated", sim}, {"real", &real}} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, HTML(&buf, tt.r))
			page := buf.String()
			titles := regexp.MustCompile(`<title>([^<]*)</title>`).FindStringSubmatch(page)
			require.NotNil(t, titles)
			started := regexp.MustCompile(`<tr><th>(started|finished)</th><td>(.*)</td></tr>`).FindAllStringSubmatch(page, -1)
			require.Len(t, started, 2)
			if tt.r.Sim != "" {
				assert.True(t, strings.HasPrefix(titles[1], "SIMULATED IST evidence report"), "title %q", titles[1])
				for _, m := range started {
					assert.Contains(t, m[2], "simulated site time", "the run's %s", m[1])
				}
			} else {
				assert.NotContains(t, titles[1], "SIMULATED")
				for _, m := range started {
					assert.NotContains(t, m[2], "site time", "the run's %s", m[1])
				}
			}

			text := pageText(page)
			assert.False(t, strings.Contains(text, "not_at_level"), "a coverage status reads not_at_level")
			n := 0
			for _, row := range tt.r.Coverage {
				if row.Status == plan.NotAtLevel {
					n++
				}
			}
			require.NotZero(t, n, "a clause proved at another level")
			assert.Equal(t, n, strings.Count(text, "not at this level"), "each such clause says so in words")

			// each case's commissioning level and each party's signature
			// on the contracts are words, not codes
			for _, c := range tt.r.Cases {
				require.NotEmpty(t, c.Cx.Name, c.ID)
				assert.Contains(t, text, c.Cx.ID+" "+c.Cx.Name, "%s's level", c.ID)
			}
			require.NotEmpty(t, tt.r.Boundaries)
			for _, b := range tt.r.Boundaries {
				for _, sig := range b.Signatures {
					assert.Regexp(t, regexp.QuoteMeta(sideWords(sideOf(b, sig.Party), b.ID))+`\s*`+regexp.QuoteMeta(sig.Party)+`\s*`+sig.Status, text,
						"%s's signature on %s", sig.Party, b.ID)
				}
			}

			for _, c := range tt.r.Cases {
				for _, id := range []string{c.ID, c.ClausePath} {
					require.Contains(t, id, ".")
					assert.False(t, strings.Contains(text, id), "%s is written without a break opportunity after its dots", id)
					assert.True(t, strings.Contains(text, strings.ReplaceAll(id, ".", ".|")), "%s does not break after each dot", id)
				}
			}
		})
	}
	css, err := tmplFS.ReadFile("tmpl/report.css")
	require.NoError(t, err)
	for _, rule := range regexp.MustCompile(`([^{}]+)\{([^}]*)\}`).FindAllStringSubmatch(string(css), -1) {
		if strings.Contains(rule[1], ".clause") || strings.Contains(rule[1], ".seg") {
			assert.NotRegexp(t, `word-break:\s*break-all|overflow-wrap:\s*anywhere`, rule[2], "%s breaks names inside a word", strings.TrimSpace(rule[1]))
		}
	}
}

// pageText is the page's text as a reader sees it, each break
// opportunity (<wbr>) a "|": tags, the head, the style and the SVG's
// texts left out.
func pageText(page string) string {
	if i := strings.Index(page, "<body>"); i >= 0 {
		page = page[i:]
	}
	page = regexp.MustCompile(`(?s)<svg.*?</svg>`).ReplaceAllString(page, "")
	page = strings.ReplaceAll(page, "<wbr>", "|")
	return html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page, ""))
}
