package hostlist_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/topology/hostlist"
)

// rackNodes names n nodes in each of racks r[from..to] of module m.
func rackNodes(m string, from, to, n int) []string {
	var out []string
	for r := from; r <= to; r++ {
		for i := 1; i <= n; i++ {
			out = append(out, fmt.Sprintf("gpu-%s-r%02d-n%02d", m, r, i))
		}
	}
	return out
}

// A host list in status folds the racks whose nodes are the same, and
// reads back (hostlist.Expand) as the nodes it was written from.
func TestFoldAcrossRacks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []string
		want  string
	}{
		{"sixteen whole racks", rackNodes("b", 1, 16, 18), "gpu-b-r[01-16]-n[01-18]"},
		{"racks 1-3 and 5", append(rackNodes("b", 1, 3, 18), rackNodes("b", 5, 5, 18)...), "gpu-b-r[01-03,05]-n[01-18]"},
		{"a rack short of a node", append(rackNodes("a", 1, 2, 18), rackNodes("a", 3, 3, 17)...), "gpu-a-r[01-02]-n[01-18],gpu-a-r03-n[01-17]"},
		{"one node a rack", []string{"gpu-a-r01-n05", "gpu-a-r02-n05", "gpu-a-r03-n05"}, "gpu-a-r[01-03]-n05"},
		{"two modules", append(rackNodes("a", 1, 2, 2), rackNodes("b", 1, 2, 2)...), "gpu-a-r[01-02]-n[01-02],gpu-b-r[01-02]-n[01-02]"},
		{"flat names over racks", []string{"node01", "node02", "node03", "node04", "node05", "node06", "node07", "node08"}, "node[01-08]"},
		{"one node", []string{"gpu-a-r01-n01"}, "gpu-a-r01-n01"},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := hostlist.Fold(tc.nodes)
			assert.Equal(t, tc.want, got)
			if got == "" {
				return
			}
			back, err := hostlist.Expand(got)
			require.NoError(t, err)
			want := slices.Clone(tc.nodes)
			slices.Sort(want)
			slices.Sort(back)
			assert.Equal(t, want, back)
		})
	}
}
