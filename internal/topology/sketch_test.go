package topology

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/peer"
)

// sketchPath is the design brief's topology sketch, read in place (it
// is not part of the repository).
func sketchPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("SEAM_TOPOLOGY_SKETCH")
	if p == "" {
		p = filepath.Join(peer.Root(t), "..", "shared", "reference", "topology_sketch.py")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the design brief's topology sketch: %v (set SEAM_TOPOLOGY_SKETCH to its path)", err)
	}
	return p
}

// randomRecords draws a handover such as the brief's: modules, racks of
// several nodes (names of one or mixed widths), in shuffled order.
func randomRecords(r *rand.Rand) []map[string]string {
	var recs []map[string]string
	modules := 1 + r.IntN(4)
	for m := range modules {
		mod := fmt.Sprintf("m%c", 'a'+m)
		for rk := 1; rk <= 1+r.IntN(5); rk++ {
			rack := fmt.Sprintf("%c-r%02d", 'a'+m, rk)
			nodes := 1 + r.IntN(20)
			for n := 1; n <= nodes; n++ {
				name := fmt.Sprintf("gpu-%s-n%02d", rack, n)
				if r.IntN(4) == 0 {
					name = fmt.Sprintf("gpu-%s-n%d", rack, n) // unpadded: n9, n10
				}
				domain := rack
				if r.IntN(3) == 0 {
					domain = fmt.Sprintf("%s-d%d", rack, n%2)
				}
				recs = append(recs, map[string]string{"node": name, "module": mod, "power_block": fmt.Sprintf("p%d", 1+r.IntN(3)),
					"cooling_loop": fmt.Sprintf("l%d", 1+r.IntN(3)), "rack": rack, "nvlink_domain": domain})
			}
		}
	}
	r.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	return recs
}

// sketchOutput is what the sketch prints: kubectl label lines and a
// Slurm tree.
type sketchOutput struct {
	labels map[string]map[string]string // node → key → value
	tree   []Switch
}

func runSketch(t *testing.T, python, sketch, file string) sketchOutput {
	t.Helper()
	out, err := peer.Run(30*time.Second, python, sketch, file)
	require.NoError(t, err)
	got := sketchOutput{labels: map[string]map[string]string{}}
	var conf strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "kubectl label node "); ok {
			f := strings.Fields(strings.TrimSuffix(rest, " --overwrite"))
			got.labels[f[0]] = map[string]string{}
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				got.labels[f[0]][k] = v
			}
			continue
		}
		conf.WriteString(line + "\n")
	}
	c, err := ParseConf("the sketch's tree", []byte(conf.String()))
	require.NoError(t, err)
	got.tree = c.Switches
	return got
}

// For any handover of the brief's records, seam's tree (leaf per rack,
// parent per module, one root) has the sketch's switch → switch and
// switch → node edges once hostlists are expanded, and seam's labels
// with the sketch's prefix are the sketch's (seam adds the scale-up
// domain from nvlink_domain).
func TestSketchEquality(t *testing.T) {
	python := peer.Python(t, "json")
	sketch := sketchPath(t)
	r := rand.New(rand.NewPCG(14, 2026))
	dir := t.TempDir()
	for i := range 12 {
		recs := randomRecords(r)
		file := filepath.Join(dir, fmt.Sprintf("inventory-%02d.json", i))
		b, err := json.Marshal(recs)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(file, b, 0o644))

		want := runSketch(t, python, sketch, file)
		nodes, diags, err := ReadRecords(file)
		require.NoError(t, err)
		require.Empty(t, diags)
		top, err := FromRecords("random", nodes, RecordOptions{})
		require.NoError(t, err)
		conf, err := ParseConf("seam's tree", render(t, top, RenderOptions{Format: FormatSlurmTree}).Text)
		require.NoError(t, err)
		d := DiffEdges(want.tree, conf.Switches)
		require.True(t, d.Empty(), "inventory %s: seam's tree differs from the sketch's:\n%s", file, FormatDiff(d, "seam only", "sketch only"))

		require.Len(t, want.labels, len(nodes))
		for _, n := range top.Nodes() {
			ours := Labels(n, "topology.example.com", false)
			for k, v := range want.labels[n.Kubernetes] {
				assert.Equal(t, v, ours[k], "inventory %s node %s label %s", file, n.Kubernetes, k)
			}
			extra := []string{}
			for k := range ours {
				if _, ok := want.labels[n.Kubernetes][k]; !ok {
					extra = append(extra, k)
				}
			}
			assert.Equal(t, []string{"topology.example.com/scale-up-domain"}, extra, "seam's one label beyond the sketch's")
		}
	}
}
