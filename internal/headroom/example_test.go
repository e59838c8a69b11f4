package headroom_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/headroom"
)

const example = "../../contracts/examples/threemodule"

// exampleModel is the worked example's model, with the alarm domains of
// its inventory.
func exampleModel(t testing.TB) (*headroom.Model, *contract.Contracts) {
	t.Helper()
	c, diags, err := contract.Load(example)
	require.NoError(t, err)
	require.Empty(t, diags)
	_, err = c.ReadInventory(nil)
	require.NoError(t, err)
	g, _ := c.Graph()
	ix := alarm.NewIndex(g)
	m, err := headroom.FromContracts(c, func(id string) string {
		d, err := ix.Resolve(id)
		if err != nil {
			return ""
		}
		return d.String()
	})
	require.NoError(t, err)
	return m, c
}

// A feed without a breaker rating (the schema reports it too) has no
// headroom: the model refuses it, naming the feed and what to write.
func TestFeedWithoutBreaker(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"seam.test/small@v0\"\nlanguage: version: \"v0.17.1\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "site.cue"), []byte(`package site

site: {
	name: "small"
	modules: {
		p1: {kind: "power", vendor: "V", failure_domain: "a"
			blocks: b: {rating: "100 kW", voltage: "400 V", redundancy: "2N", powers: ["ma"]
				feeds: {a: breaker: "50 A", b: ups: {rating: "50 kW", ride_through: "5 min"}}}}
		ma: {kind: "it", vendor: "G", failure_domain: "a"
			racks: r1: {design_power: "40 kW", pdus: {a: {feed: "p1/b/a", breaker: "100 A"}, b: {feed: "p1/b/b", breaker: "100 A"}}}}
	}
}
`), 0o644))
	c, diags, err := contract.Load(dir)
	require.NoError(t, err)
	require.NotNil(t, c)
	require.Positive(t, diags.Count(diag.Error), "the schema reports the missing breaker")
	_, err = headroom.FromContracts(c, nil)
	require.ErrorContains(t, err, `site.modules.p1.blocks.b.feeds.b: feed p1/b/b has no breaker rating: its headroom cannot be computed (write breaker: "… A")`)
}
