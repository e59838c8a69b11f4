package topology

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/encoding/yaml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/topology/hostlist"
)

// yamlDocs decodes each document of a YAML stream into a new T.
func yamlDocs[T any](t *testing.T, b []byte) []T {
	t.Helper()
	ctx := cuecontext.New()
	d := yaml.NewDecoder("out.yaml", bytes.NewReader(b))
	var out []T
	for {
		expr, err := d.Extract()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		var v T
		require.NoError(t, ctx.BuildExpr(expr).Decode(&v))
		out = append(out, v)
	}
}

type yamlTopology struct {
	Topology       string `json:"topology"`
	ClusterDefault bool   `json:"cluster_default"`
	Tree           *struct {
		Switches []struct{ Switch, Children, Nodes string } `json:"switches"`
	} `json:"tree"`
	Block *struct {
		BlockSizes []int                           `json:"block_sizes"`
		Blocks     []struct{ Block, Nodes string } `json:"blocks"`
	} `json:"block"`
	Flat *bool `json:"flat"`
}

func expand(t *testing.T, s string) []string {
	t.Helper()
	out, err := hostlist.Expand(s)
	require.NoError(t, err)
	return out
}

// topology.yaml as topology.yaml(5) (Slurm 25.05+) describes it: a list
// of topologies, each "topology" first, one cluster_default, exactly one
// of tree, block or flat; the tree's switches with children and nodes,
// the block's block_sizes and blocks. Debian's Slurm 22.05 cannot read
// it: this is the check.
func TestSlurmYAMLGrammar(t *testing.T) {
	top := exampleTopology(t)
	out := render(t, top, RenderOptions{Format: FormatSlurmYAML})
	assert.True(t, bytes.HasPrefix(bytes.SplitN(out.Text, []byte("\n- "), 2)[1], []byte("topology: ")), "topology is the first attribute")
	docs := yamlDocs[[]yamlTopology](t, out.Text)
	require.Len(t, docs, 1)
	entries := docs[0]
	require.Len(t, entries, 2)
	defaults := 0
	for _, e := range entries {
		kinds := 0
		for _, set := range []bool{e.Tree != nil, e.Block != nil, e.Flat != nil} {
			if set {
				kinds++
			}
		}
		assert.Equal(t, 1, kinds, "%s: exactly one of tree, block, flat", e.Topology)
		if e.ClusterDefault {
			defaults++
		}
	}
	assert.Equal(t, 1, defaults)

	var tree []Switch
	for _, s := range entries[0].Tree.Switches {
		assert.LessOrEqual(t, len(s.Switch), MaxSwitchName)
		tree = append(tree, Switch{Name: s.Switch, Nodes: expand(t, s.Nodes), Switches: expand(t, s.Children)})
	}
	assert.True(t, DiffEdges(tree, top.Tree()).Empty(), "the yaml tree is the model's")

	b := entries[1].Block
	assert.Equal(t, []int{18, 36, 72, 144, 288}, b.BlockSizes)
	require.Len(t, b.Blocks, 48)
	for _, bl := range b.Blocks {
		assert.GreaterOrEqual(t, len(expand(t, bl.Nodes)), b.BlockSizes[0], "each block has at least the base block size")
	}
	_, err := SlurmAggregates(len(b.Blocks), b.BlockSizes)
	assert.NoError(t, err, "successive sizes are power-of-two multiples")
}

// topology.conf for topology/block as topology.conf(5) describes it:
// BlockName= with Nodes=, one BlockSizes= line, nothing else.
func TestSlurmBlockGrammar(t *testing.T) {
	out := render(t, exampleTopology(t), RenderOptions{Format: FormatSlurmBlock})
	for _, line := range strings.Split(strings.TrimSpace(string(out.Text)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(f[0], "BlockName="):
			require.Len(t, f, 2, line)
			assert.True(t, strings.HasPrefix(f[1], "Nodes="), line)
		case strings.HasPrefix(f[0], "BlockSizes="):
			require.Len(t, f, 1, line)
		default:
			t.Errorf("not a line of topology/block: %q", line)
		}
	}
	c, err := ParseConf("blocks", out.Text)
	require.NoError(t, err)
	assert.Len(t, c.Blocks, 48)
	assert.Equal(t, []int{18, 36, 72, 144, 288}, c.Sizes)
}

type k8sObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Levels       []struct{ NodeLabel string } `json:"levels"`
		NodeLabels   map[string]string            `json:"nodeLabels"`
		TopologyName string                       `json:"topologyName"`
	} `json:"spec"`
}

// The Node patch is a stream of v1 Nodes carrying only seam's labels;
// Kueue's objects keep v1beta2's rules (at most 16 levels, hostname
// last; a flavor with a topology has 1 to 8 node labels).
func TestKubernetesObjects(t *testing.T) {
	top := exampleTopology(t)
	nodes := yamlDocs[k8sObject](t, render(t, top, RenderOptions{Format: FormatK8s}).Text)
	require.Len(t, nodes, 864)
	for i, n := range top.Nodes() {
		assert.Equal(t, "v1", nodes[i].APIVersion)
		assert.Equal(t, "Node", nodes[i].Kind)
		assert.Equal(t, n.Kubernetes, nodes[i].Metadata.Name)
		assert.Equal(t, Labels(n, "", false), nodes[i].Metadata.Labels)
	}
	kueue := yamlDocs[k8sObject](t, render(t, top, RenderOptions{Format: FormatKueue}).Text)
	require.Len(t, kueue, 2)
	tp, rf := kueue[0], kueue[1]
	assert.Equal(t, KueueAPIVersion, tp.APIVersion)
	assert.Equal(t, "Topology", tp.Kind)
	require.NotEmpty(t, tp.Spec.Levels)
	assert.LessOrEqual(t, len(tp.Spec.Levels), 16)
	assert.Equal(t, "kubernetes.io/hostname", tp.Spec.Levels[len(tp.Spec.Levels)-1].NodeLabel)
	assert.Equal(t, "ResourceFlavor", rf.Kind)
	assert.Equal(t, tp.Metadata.Name, rf.Spec.TopologyName)
	assert.Equal(t, map[string]string{"topology.seam.io/generation": "gb300-nvl72"}, rf.Spec.NodeLabels)
}

// A leaf per scale-up domain: racks of one declared domain (NVL36×2)
// make one leaf; the rack stays a label.
func TestLeafPerDomain(t *testing.T) {
	recs := smallRecords(t)
	for _, r := range recs {
		if strings.HasPrefix(r.Rack, "a-") {
			r.NVLinkDomain = "a-d1"
		}
	}
	top, err := FromRecords("small", recs, RecordOptions{Options: Options{Leaf: LeafDomain}})
	require.NoError(t, err)
	text := string(render(t, top, RenderOptions{Format: FormatSlurmTree}).Text)
	assert.Contains(t, text, "\nSwitchName=a-d1 Nodes=gpu-a-r01-n[01-02],gpu-a-r02-n[01-02]\n")
	assert.Contains(t, text, "\nSwitchName=ma Switches=a-d1\n")
	assert.Contains(t, string(render(t, top, RenderOptions{Format: FormatKueue}).Text), "- nodeLabel: topology.seam.io/scale-up-domain")
}
