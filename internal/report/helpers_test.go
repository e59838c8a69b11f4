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
	plans   = map[compile.Options]compiled{}
)

// examplePlan compiles the worked example (once per options).
func examplePlan(t testing.TB, level, module string) (*plan.Plan, []byte) {
	t.Helper()
	opt := compile.Options{Level: level, Module: module, MaxHold: 5 * time.Second}
	plansMu.Lock()
	defer plansMu.Unlock()
	if c, ok := plans[opt]; ok {
		return c.p, c.raw
	}
	p, diags, err := compile.Dir(example, opt)
	require.NoError(t, err, "%v", diags)
	raw, err := plan.Encode(p)
	require.NoError(t, err)
	plans[opt] = compiled{p, raw}
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
