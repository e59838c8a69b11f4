package report

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/report/reporttest"
)

const example = "../../contracts/examples/threemodule"

type compiled struct {
	p   *plan.Plan
	raw []byte
}

var (
	plansMu sync.Mutex
	plans   = map[[2]string]compiled{}
)

// exampleSignatures are the contracts' signatures the example's plans
// record, as contractc compile would find them: one of each state on
// the power joints and the grid, the rest missing.
var exampleSignatures = map[string][]plan.Signature{
	"p1-ma": {
		{Party: "VoltSkid", Status: "signed", Key: "SHA256:VoltSkidKeyFingerprint", SignedAt: "2026-02-03T10:00:00Z"},
		{Party: "GPUWorks", Status: "stale", Key: "SHA256:GPUWorksKeyFingerprint", SignedAt: "2026-01-05T09:30:00Z"},
	},
	"l1-ma":   {{Party: "CoolFlow", Status: "invalid", Key: "SHA256:StrangerKeyFingerprint"}},
	"u1-site": {{Party: "ExamplePowerLight", Status: "signed", Key: "SHA256:UtilityKeyFingerprint", SignedAt: "2026-02-10T08:00:00Z"}},
}

// examplePlan compiles the worked example (once per level and module),
// recording exampleSignatures.
func examplePlan(t testing.TB, level, module string) (*plan.Plan, []byte) {
	t.Helper()
	opt := compile.Options{Level: level, Module: module, MaxHold: 5 * time.Second, Signatures: exampleSignatures}
	plansMu.Lock()
	defer plansMu.Unlock()
	if c, ok := plans[[2]string{level, module}]; ok {
		return c.p, c.raw
	}
	p, diags, err := compile.Dir(example, opt)
	require.NoError(t, err, "%v", diags)
	raw, err := plan.Encode(p)
	require.NoError(t, err)
	plans[[2]string{level, module}] = compiled{p, raw}
	return p, raw
}

// bundle writes an evidence bundle of the example's plan at level for
// module, and returns its directory.
func writeBundle(t testing.TB, level, module string, opt reporttest.Options) string {
	t.Helper()
	p, raw := examplePlan(t, level, module)
	dir := filepath.Join(t.TempDir(), level+"-"+module)
	_, err := reporttest.Write(dir, p, raw, opt)
	require.NoError(t, err)
	return dir
}
