package burnin

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A rack whose nodes 5 and 7 (of 18) have slow scale-up links: node 6
// sits between them, so both its ring pairs are low, while its own run
// and the rack's bisection clear it. Before holding it on that pair
// evidence the ladder re-pairs it with a node already known good, and
// the re-test clears it; the two slow nodes are held, each with the
// pairs that implicated it named, among them its re-test.
func TestRepairClearsTheNodeBetweenTwoSlowOnes(t *testing.T) {
	s := healthySite(t)
	nodes := s.nodes[18:36]
	slow1, good, slow2 := nodes[4].Name, nodes[5].Name, nodes[6].Name
	res, err := Run(context.Background(), nodes, s.slowLinks(map[string]float64{slow1: 0.5, slow2: 0.5}), Config{})
	require.NoError(t, err)
	require.Equal(t, sortedNames(slow1, slow2), heldNames(res), reasons(res))
	assert.Empty(t, res.Retests())
	assert.True(t, res.Node(good).Passed, "%s: %v", good, res.Node(good).Reasons())

	var repairs []*Group
	for _, g := range res.Groups {
		if g.Scope == ScopeRepair {
			repairs = append(repairs, g)
		}
	}
	require.Len(t, repairs, 3, "one re-test pair for each node flagged on its pairs")
	partner := map[string]string{}
	for _, g := range repairs {
		require.Len(t, g.Members, 2, g.Name)
		other := g.Members[1]
		assert.True(t, res.Node(other).Passed, "re-paired with %s, which is known good", other)
		assert.NotContains(t, []string{nodes[3].Name, nodes[7].Name}, other, "not a partner of a slow node's own ring")
		partner[g.Members[0]] = other
		assert.NotEmpty(t, g.File)
	}
	for _, tc := range []struct{ node, left, right string }{
		{slow1, nodes[3].Name, good},
		{slow2, good, nodes[7].Name},
	} {
		why := strings.Join(res.Node(tc.node).Reasons(), "\n")
		assert.Contains(t, why, "re-paired with "+partner[tc.node]+", known good: "+tc.node+"+"+partner[tc.node], tc.node)
		assert.Contains(t, why, tc.left+"+"+tc.node, "its ring pairs are named")
		assert.Contains(t, why, tc.node+"+"+tc.right)
		assert.Contains(t, why, tc.node+": single busbw_gbps", "and its own run")
	}
	for _, f := range res.Node(good).Flags {
		t.Errorf("%s: %s", good, f)
	}
}

// Two nodes whose telemetry does not read (no measurement of their
// own), and whose runs are slow, sit on both sides of a good node: they
// are held on their own problems, and their pairs do not implicate the
// node between them.
func TestNoReadingDoesNotImplicateNeighbours(t *testing.T) {
	s := healthySite(t)
	nodes := s.nodes[36:54]
	bad1, good, bad2 := nodes[4].Name, nodes[5].Name, nodes[6].Name
	edit := func(j Job, out Output) Output {
		in := func(n string) bool {
			for _, m := range j.Nodes {
				if m == n {
					return true
				}
			}
			return false
		}
		switch {
		case len(j.Nodes) == 1 && (j.Nodes[0] == bad1 || j.Nodes[0] == bad2) && j.Command[0] == "nvidia-smi":
			out.Stdout = []byte("garbage\n")
		case (in(bad1) || in(bad2)) && j.Command[0] == "all_reduce_perf":
			out.Stdout = slowRow(out.Stdout)
		}
		return out
	}
	res, err := Run(context.Background(), nodes, mangle{s.tools(), edit}, Config{})
	require.NoError(t, err)
	require.Equal(t, sortedNames(bad1, bad2), heldNames(res), reasons(res))
	assert.True(t, res.Node(good).Passed, "%s: %v", good, res.Node(good).Reasons())
	assert.Contains(t, strings.Join(res.Node(bad1).Reasons(), "\n"), "node "+bad1+": telemetry")
	for _, g := range res.Groups {
		assert.NotEqual(t, ScopeRepair, g.Scope, "no node is implicated by its pairs alone: %s", g.Name)
	}
}

// A tray whose nvidia-smi reads another GPU generation than the
// inventory lists is a finding naming the node, both models and what to
// do; the node is held. The inventory's model is read from the graph.
func TestGPUModelDisagreesWithTheInventory(t *testing.T) {
	s := healthySite(t)
	nodes := s.nodes[54:57]
	for _, n := range nodes {
		require.Equal(t, "B300", n.GPUModel, "the tray's GPUs in the inventory")
	}
	odd := nodes[1].Name
	edit := func(j Job, out Output) Output {
		if j.Nodes[0] == odd && j.Command[0] == "nvidia-smi" {
			out.Stdout = bytes.ReplaceAll(out.Stdout, []byte("NVIDIA GB300"), []byte("NVIDIA H100 80GB HBM3"))
		}
		return out
	}
	res, err := Run(context.Background(), nodes, mangle{s.tools(), edit}, Config{})
	require.NoError(t, err)
	assert.Equal(t, []string{odd}, heldNames(res), reasons(res))
	why := strings.Join(res.Node(odd).Reasons(), "\n")
	assert.Contains(t, why, "node "+odd+": nvidia-smi (nodes/"+odd+"/nvidia-smi.csv) reads GPU model NVIDIA H100 80GB HBM3, but the inventory has B300")
	assert.Contains(t, why, "swap the tray or correct the inventory")
	for _, n := range []string{nodes[0].Name, nodes[2].Name} {
		assert.True(t, res.Node(n).Passed, "GB300 read where the inventory has B300 trays: the same part (%v)", res.Node(n).Reasons())
	}
}

func TestSameGPUModel(t *testing.T) {
	for _, tc := range []struct {
		read, inventory string
		same            bool
	}{
		{"NVIDIA GB300", "B300", true},
		{"NVIDIA GB300", "GB300 compute tray", true},
		{"NVIDIA GB200", "B200", true},
		{"NVIDIA H100 80GB HBM3", "H100", true},
		{"NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB", true},
		{"NVIDIA H100 80GB HBM3", "B300", false},
		{"NVIDIA H200", "H100 SXM5", false},
		{"NVIDIA GB300", "B200", false},
		{"NVIDIA GB300", "", true},
	} {
		assert.Equal(t, tc.same, sameGPUModel(tc.read, tc.inventory), "%s vs %s", tc.read, tc.inventory)
	}
}

func sortedNames(ns ...string) []string {
	out := append([]string(nil), ns...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// slowRow sets the fixed size's row's bandwidths to 400 GB/s (about half
// of healthy), as a slow link would.
func slowRow(out []byte) []byte {
	var b strings.Builder
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 13 && f[0] == "8589934592" {
			f[6], f[7], f[10], f[11] = "400.00", "400.00", "400.00", "400.00"
			l = strings.Join(f, "  ")
		}
		b.WriteString(l + "\n")
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}
