package recorded_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/burnin/recorded"
	"github.com/seamdc/seam/internal/burnin/recorded/recordedtest"
)

// A rack of four whose nodes 1 and 3 are slow: nodes 2 and 4 each sit
// between them, both their ring pairs low, while their own runs and the
// rack's bisection clear them. Recorded outputs cannot re-pair them with
// a node known good, so grading reports them implicated, re-test
// needed, naming the pairs, and does not hold them; the slow nodes are
// held on their own runs.
func TestGradeImplicatesTheNodeBetweenTwoSlowOnes(t *testing.T) {
	nodes := recordedtest.Inventory(2, 4, 16)
	n := func(i int) string { return nodes[i].Name }
	dir := t.TempDir()
	recordedtest.Write(t, samples, dir, nodes, recordedtest.Options{Slow: map[string]float64{n(0): 0.6, n(2): 0.6}})
	res := grade(t, dir, nodes)
	assert.Equal(t, []string{n(0), n(2)}, names(res.Held()), "%s", reasons(res))
	assert.Equal(t, []string{n(1), n(3)}, names(res.Retests()), "%s", reasons(res))
	r := res.Node(n(1))
	assert.Equal(t, burnin.VerdictRetest, r.Verdict())
	assert.Empty(t, r.Flags)
	why := strings.Join(r.Retest, "\n")
	assert.Contains(t, why, "node "+n(1)+": implicated, re-test needed: its pairs "+n(0)+"+"+n(1)+" ")
	assert.Contains(t, why, n(1)+"+"+n(2)+" ")
	assert.Contains(t, why, "no recorded run pairs it with a node known good")
	for _, other := range nodes[4:] {
		assert.True(t, res.Node(other.Name).Passed, other.Name)
	}
}

// A rack of four whose nodes 2 and 4 are slow and whose single-node
// all-reduces did not read (exit 1): they are held on their own
// failures, and the pairs they were in do not implicate nodes 1 and 3,
// which pass.
func TestGradeNoReadingDoesNotImplicateNeighbours(t *testing.T) {
	nodes := recordedtest.Inventory(1, 4, 16)
	n := func(i int) string { return nodes[i].Name }
	dir := t.TempDir()
	site := recordedtest.Write(t, samples, dir, nodes, recordedtest.Options{Slow: map[string]float64{n(1): 0.6, n(3): 0.6}})
	for i, e := range site.Entries {
		if e.Step == recorded.StepSingle && (e.Nodes[0] == n(1) || e.Nodes[0] == n(3)) {
			site.Entries[i].Exit = 1
		}
	}
	site.WriteManifest(t)
	res := grade(t, dir, nodes)
	assert.Equal(t, []string{n(1), n(3)}, names(res.Held()), "%s", reasons(res))
	assert.Empty(t, res.Retests(), "%s", reasons(res))
	for _, i := range []int{0, 2} {
		assert.True(t, res.Node(n(i)).Passed, "%s: %v", n(i), res.Node(n(i)).Reasons())
	}
	require.Contains(t, strings.Join(res.Node(n(1)).Reasons(), "\n"), "node "+n(1)+": single-node all-reduce")
}

// The samples' GPUs are H100s: a node the inventory lists with B300
// trays is held on that finding, naming both models.
func TestGradeGPUModelDisagreesWithTheInventory(t *testing.T) {
	nodes := recordedtest.Inventory(1, 3, 16)
	dir := t.TempDir()
	recordedtest.Write(t, samples, dir, nodes, recordedtest.Options{})
	nodes[1].GPUModel = "B300"
	nodes[2].GPUModel = "H100 SXM5 80GB"
	res := grade(t, dir, nodes)
	assert.Equal(t, []string{nodes[1].Name}, names(res.Held()), "%s", reasons(res))
	assert.Contains(t, strings.Join(res.Node(nodes[1].Name).Reasons(), "\n"), "reads GPU model NVIDIA H100 80GB HBM3, but the inventory has B300")
}
