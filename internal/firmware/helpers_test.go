package firmware

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/discover"
	"github.com/seamdc/seam/internal/inventory"
)

const exampleDir = "../../contracts/examples/threemodule"

// the example's inventory, loaded once: three modules of 16 racks of
// 18 nodes, each rack its own scale-up domain
var example struct {
	once sync.Once
	g    *inventory.Graph
	err  error
}

func exampleGraph(t testing.TB) *inventory.Graph {
	t.Helper()
	example.once.Do(func() {
		c, diags, err := contract.Load(exampleDir)
		if err == nil && diags.Count(diag.Error) > 0 {
			err = diagsErr(diags)
		}
		if err != nil {
			example.err = err
			return
		}
		if hd, err := c.ReadInventory(nil); err != nil || hd.Count(diag.Error) > 0 {
			example.err = diagsErr(hd)
			return
		}
		example.g, _ = c.Graph()
	})
	require.NoError(t, example.err)
	return example.g
}

func diagsErr(l diag.List) error {
	var b strings.Builder
	diag.Text(&b, l)
	return errors.New(b.String())
}

func exampleSite(t testing.TB) *Site { return NewSite(exampleGraph(t)) }

// exampleSet is the example's baseline with its policy replaced.
func exampleSet(t testing.TB, p Policy) *Set {
	t.Helper()
	set, diags, err := Load(filepath.Join(exampleDir, Dir))
	require.NoError(t, err)
	require.Zero(t, diags.Count(diag.Error), "%v", diags)
	set.Policy = p
	return set
}

// everyModule holds a control-plane replica in each of the example's
// modules, as its operate.cue does.
var everyModule = map[string][]string{"ma": {"slurmctld"}, "mb": {"slurmctld"}, "mc": {"slurmctld"}}

// discoveryOf is a discovery of the whole site with findings, through
// its JSON.
func discoveryOf(t testing.TB, s *Site, findings ...discover.Finding) *Discovery {
	t.Helper()
	if findings == nil {
		findings = []discover.Finding{}
	}
	b, err := json.Marshal(&discover.Report{Site: s.Name, Declared: len(s.Trays), Findings: findings, Errors: []*discover.Error{}})
	require.NoError(t, err)
	d, err := ParseDiscovery("discovery.json", b)
	require.NoError(t, err)
	return d
}

// writeFiles writes name → content into a new directory.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	return dir
}

// lineOf is the line of src that holds marker (1-based).
func lineOf(t testing.TB, src, marker string) int {
	t.Helper()
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	t.Fatalf("no line holds %q", marker)
	return 0
}

func readFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}
