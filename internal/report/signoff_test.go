package report

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/report/reporttest"
)

// signOffRows are the rows of the page's sign-off table, each a list of
// its cells' text.
func signOffRows(t *testing.T, page string) [][]string {
	t.Helper()
	i := strings.Index(page, `<section id="signatures">`)
	require.Positive(t, i, "no sign-off section")
	table := regexp.MustCompile(`(?s)<table class="sign">.*?</table>`).FindString(page[i:])
	require.NotEmpty(t, table)
	var rows [][]string
	for _, tr := range regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`).FindAllStringSubmatch(table, -1) {
		var cells []string
		for _, td := range regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`).FindAllStringSubmatch(tr[1], -1) {
			cells = append(cells, strings.TrimSpace(pageText(strings.ReplaceAll(td[1], "<br>", " "))))
		}
		rows = append(rows, cells)
	}
	return rows
}

// The example's sign-off page names every party of every boundary,
// with the side it signs for and its signature on the contracts: signed
// with the key and date, stale, invalid or missing; beside the
// operator, witness, accepting engineer and owner rows. The IST plan of
// the whole site tests every boundary of the example.
func TestSignOffNamesEveryPartyOfEveryBoundary(t *testing.T) {
	c, _, err := contract.Load(example)
	require.NoError(t, err)
	dir := writeBundle(t, "ist", "", reporttest.Options{})
	r, err := Load(dir, Options{})
	require.NoError(t, err)
	require.Len(t, r.Boundaries, len(c.Boundaries), "the plan tests every boundary of the example")
	var b bytes.Buffer
	require.NoError(t, HTML(&b, r))
	rows := signOffRows(t, b.String())
	require.Equal(t, []string{"role", "name", "organisation", "contracts", "signature", "date"}, rows[0])
	var roles []string
	for _, row := range rows[1:5] {
		roles = append(roles, row[0])
	}
	assert.Equal(t, []string{"operator", "witness", "accepting engineer", "owner"}, roles)

	byRole := map[string][]string{} // "supplier of p1-ma VoltSkid" → its row
	for _, row := range rows[5:] {
		byRole[row[0]+" "+row[2]] = row
	}
	n := 0
	for _, cb := range c.Boundaries {
		supplier, consumer := c.Site.Module(cb.Supplier.To), c.Site.Module(cb.Consumer.To)
		for _, party := range cb.Parties {
			side := "party to " + cb.ID
			switch {
			case party == supplier.Vendor:
				side = "supplier of " + cb.ID
			case consumer != nil && party == consumer.Vendor:
				side = "consumer of " + cb.ID
			}
			row, ok := byRole[side+" "+party]
			require.True(t, ok, "no row for %s, %s; rows %q", party, side, rows)
			n++
			want := "missing: not signed"
			for _, s := range exampleSignatures[cb.ID] {
				if s.Party != party {
					continue
				}
				switch s.Status {
				case "signed":
					want = "signed key " + s.Key + " on " + s.SignedAt
				case "stale":
					want = "stale: signed an earlier version key " + s.Key + " on " + s.SignedAt
				case "invalid":
					want = "invalid: the signature does not hold key " + s.Key
				}
			}
			assert.Equal(t, want, row[3], "%s, %s", party, side)
		}
	}
	assert.Len(t, rows[5:], n, "a row per party of each boundary, no more")
	assert.Equal(t, 20, n, "the example's ten boundaries have two parties each")
	// the grid's consumer is the site, which names no vendor: the site's
	// operator signs as another party
	assert.Contains(t, byRole, "party to u1-site SiteOps")
	assert.Contains(t, byRole, "supplier of u1-site ExamplePowerLight")
	assert.NotContains(t, b.String(), "supplier's vendor")
}

// A plan compiled before plans recorded their boundaries keeps the
// generic vendor rows, without the contracts column.
func TestSignOffOfAnOlderPlan(t *testing.T) {
	r := &Run{Site: "threemodule", Level: "sat", Operator: "A. Engineer"}
	var b bytes.Buffer
	require.NoError(t, HTML(&b, r))
	rows := signOffRows(t, b.String())
	require.Equal(t, []string{"role", "name", "organisation", "signature", "date"}, rows[0])
	var roles []string
	for _, row := range rows[1:] {
		roles = append(roles, row[0])
	}
	assert.Equal(t, []string{"operator", "witness", "accepting engineer", "owner", "supplier's vendor", "consumer's vendor"}, roles)
}

// The parties' rows follow the boundaries in the plan's order and each
// boundary's parties in its order; a party's side is its module's
// vendor's, or another.
func TestSignersNameTheParties(t *testing.T) {
	signed := plan.Signature{Party: "VoltSkid", Status: "signed", Key: "SHA256:k", SignedAt: "2026-03-01T10:00:00Z"}
	r := &Run{Operator: "A. Engineer", Boundaries: []plan.Boundary{
		{ID: "p1-ma", Supplier: plan.Party{Module: "p1", Party: "VoltSkid"}, Consumer: plan.Party{Module: "ma", Party: "GPUWorks"},
			Signatures: []plan.Signature{signed, {Party: "GPUWorks", Status: "missing"}}},
		{ID: "ctl-ma", Supplier: plan.Party{Module: "ctl", Party: "SiteOps"}, Consumer: plan.Party{Module: "ma", Party: "SiteOps"},
			Signatures: []plan.Signature{{Party: "SiteOps", Status: "stale"}, {Party: "Witness Co", Status: "invalid"}}},
	}}
	got := r.Signers()
	require.Len(t, got, 8)
	assert.Equal(t, Signer{Role: "owner"}, got[3])
	assert.Equal(t, Signer{Role: SideSupplier, Organisation: "VoltSkid", Boundary: "p1-ma", Side: SideSupplier, Contract: &signed}, got[4])
	assert.Equal(t, Signer{Role: SideConsumer, Organisation: "GPUWorks", Boundary: "p1-ma", Side: SideConsumer, Contract: &r.Boundaries[0].Signatures[1]}, got[5])
	assert.Equal(t, SideBoth, got[6].Side, "one vendor on both sides")
	assert.Equal(t, SideOther, got[7].Side)
	assert.Equal(t, "invalid", got[7].Contract.Status)
}

// Every case shows its commissioning level as a tag in the level's
// colour, and the summary counts the cases of each level: the example's
// SAT of ma has its steady cases at L3 (functional, the default tag) and
// its transient ones at L4, which this site renames and recolours (a
// light colour: dark ink).
func TestCasesShowTheirCommissioningLevel(t *testing.T) {
	p, _ := examplePlan(t, "sat", "ma")
	renamed := *p
	renamed.Commissioning = plan.DefaultCommissioning()
	renamed.Commissioning.Levels[3] = plan.CxLevel{ID: plan.L4, Name: "transients", Colour: "#FDE68A"}
	raw, err := plan.Encode(&renamed)
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = reporttest.Write(dir, &renamed, raw, reporttest.Options{})
	require.NoError(t, err)
	r, err := Load(dir, Options{})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, HTML(&buf, r))
	page := buf.String()

	tags := map[string]string{
		plan.Steady:    `<span class="cx" style="background:#059669;color:#fff" title="commissioning level">L3 functional</span>`,
		plan.Transient: `<span class="cx" style="background:#fde68a;color:#111" title="commissioning level">L4 transients</span>`,
	}
	want := map[string]int{}
	for _, c := range r.Cases {
		tag := tags[c.Kind]
		require.NotEmpty(t, tag, c.ID)
		want[tag]++
		h3 := regexp.MustCompile(`(?s)<article class="case" id="` + regexp.QuoteMeta(caseAnchor(c.ID)) + `">\s*<h3>(.*?)</h3>`).FindStringSubmatch(page)
		require.NotNil(t, h3, c.ID)
		assert.Contains(t, h3[1], tag, "%s shows its level", c.ID)
	}
	require.Len(t, want, 2)
	levels := regexp.MustCompile(`(?s)<table class="tally levels">.*?</table>`).FindString(page)
	require.NotEmpty(t, levels, "the summary counts the cases per level")
	for tag, n := range want {
		assert.Equal(t, n, levelCount(t, levels, tag), tag)
	}
	assert.Less(t, strings.Index(levels, tags[plan.Steady]), strings.Index(levels, tags[plan.Transient]), "levels in the order a project runs them")
}

func caseAnchor(id string) string { return "case-" + anchor(id) }

// levelCount adds up the pass, fail, error and other cells of tag's row
// in the summary's level table.
func levelCount(t *testing.T, table, tag string) int {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta("<td>"+tag+"</td>") + `<td>(\d+)</td><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td>`).FindStringSubmatch(table)
	require.NotNil(t, m, "no row for %s", tag)
	n := 0
	for _, cell := range m[1:] {
		v, err := strconv.Atoi(cell)
		require.NoError(t, err)
		n += v
	}
	return n
}

// A tag's text stays readable on its colour, and a colour that is not
// #rrggbb never reaches the style attribute.
func TestCxTagHTML(t *testing.T) {
	for _, tt := range []struct {
		tag  CxTag
		want string
	}{
		{CxTag{ID: "L1", Name: "factory", Colour: "#6b7280"}, `style="background:#6b7280;color:#fff"`},
		{CxTag{ID: "L2", Name: "fit-out", Colour: "#FFFFFF"}, `style="background:#ffffff;color:#111"`},
		{CxTag{ID: "L3", Name: "<b>", Colour: "red;background:url(x)"}, `style="background:#6b7280;color:#fff" title="commissioning level">L3 &lt;b&gt;</span>`},
		{CxTag{}, `>no level</span>`},
	} {
		assert.Contains(t, string(cxTagHTML(tt.tag)), tt.want)
	}
}
