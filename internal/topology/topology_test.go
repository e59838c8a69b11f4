package topology

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const example = "../../contracts/examples/threemodule"

var (
	exampleOnce sync.Once
	exampleTopo *Topology
	exampleErr  error
)

// exampleTopology is the worked example's topology, built from its
// contract and handover inventory as contractc topology does.
func exampleTopology(t testing.TB) *Topology {
	t.Helper()
	exampleOnce.Do(func() {
		c, diags, err := contract.Load(example)
		if err != nil || len(diags) > 0 {
			exampleErr = err
			if err == nil {
				exampleErr = fmt.Errorf("the example does not load: %v", diags)
			}
			return
		}
		if _, err := c.ReadInventory(nil); err != nil {
			exampleErr = err
			return
		}
		g, _ := c.Graph()
		exampleTopo, exampleErr = FromGraph(g, GraphOptions{RackNames: RackNames(g, c.Handovers)})
	})
	require.NoError(t, exampleErr)
	return exampleTopo
}

func smallRecords(t testing.TB) []*inventory.NodeRecord {
	t.Helper()
	recs, diags, err := ReadRecords("testdata/small.json")
	require.NoError(t, err)
	require.Empty(t, diags)
	return recs
}

func small(t testing.TB) *Topology {
	t.Helper()
	top, err := FromRecords("small", smallRecords(t), RecordOptions{Generation: "gb300-nvl72"})
	require.NoError(t, err)
	return top
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/topology -update to write %s", path)
	assert.Equal(t, string(want), string(got), "%s differs (go test ./internal/topology -update rewrites it)", path)
}

// The example: 3 modules × 16 racks × 18 nodes, each rack its own NVL72
// domain, the racks named as the handover names them.
func TestExampleModel(t *testing.T) {
	top := exampleTopology(t)
	assert.Equal(t, "threemodule", top.Site)
	require.Len(t, top.Modules, 3)
	assert.Len(t, top.Leaves(), 48)
	assert.Len(t, top.Nodes(), 864)
	ma := top.Modules[0]
	assert.Equal(t, "ma", ma.Name)
	assert.Equal(t, "gb300-nvl72", ma.Generation)
	assert.Equal(t, "fd-a", ma.FailureDomain)
	assert.Equal(t, "a-r01", ma.Leaves[0].Name)
	n := ma.Leaves[0].Nodes[2]
	assert.Equal(t, Node{Slurm: "gpu-a-r01-n03", Kubernetes: "gpu-a-r01-n03.cluster.example", Module: "ma", Rack: "a-r01", Domain: "a-r01",
		PowerBlock: "p1", Loop: "l1", Generation: "gb300-nvl72", Leaf: "a-r01", From: "ma/r01/compute-03"}, *n)
	assert.Equal(t, "3 modules, 48 racks, 48 leaves, 864 nodes", top.Summary())
}

func render(t *testing.T, top *Topology, o RenderOptions) *Output {
	t.Helper()
	out, err := Render(top, o)
	require.NoError(t, err)
	return out
}

// Every format, deterministic and stamped, for the small inventory;
// the example's Slurm files.
func TestGolden(t *testing.T) {
	for _, f := range Formats {
		out := render(t, small(t), RenderOptions{Format: f, Command: "contractc topology --records testdata/small.json --format " + f})
		golden(t, "small."+f+".golden", out.Text)
		again := render(t, small(t), RenderOptions{Format: f, Command: "contractc topology --records testdata/small.json --format " + f})
		assert.Equal(t, out.Text, again.Text, "deterministic")
		st := ReadStamp(out.Text)
		assert.True(t, st.Generated && st.Intact, f)
	}
	for _, f := range []string{FormatSlurmTree, FormatSlurmBlock, FormatFeatures} {
		out := render(t, exampleTopology(t), RenderOptions{Format: f, Command: "contractc topology contracts/examples/threemodule --format " + f})
		assert.Empty(t, out.Warnings, f)
		golden(t, "threemodule."+f+".golden", out.Text)
	}
}

func TestExampleTree(t *testing.T) {
	out := render(t, exampleTopology(t), RenderOptions{Format: FormatSlurmTree})
	text := string(out.Text)
	assert.Contains(t, text, "\nSwitchName=a-r01 Nodes=gpu-a-r01-n[01-18]\n")
	assert.Contains(t, text, "\nSwitchName=ma Switches=a-r[01-16]\n")
	assert.True(t, strings.HasSuffix(text, "\nSwitchName=spine Switches=ma,mb,mc\n"))
	conf, err := ParseConf("t", out.Text)
	require.NoError(t, err)
	assert.True(t, DiffEdges(conf.Switches, exampleTopology(t).Tree()).Empty(), "topology.conf reads back as the model")
	require.NoError(t, CheckTree(conf.Switches, nil))
}

// The block-size rule on the example: a power-of-two multiple of 18 up
// to one module, and Slurm's aggregation (as block_record.c does it)
// makes the top level exactly the modules and never crosses one.
func TestExampleBlocks(t *testing.T) {
	top := exampleTopology(t)
	p, err := PlanBlocks(top)
	require.NoError(t, err)
	assert.Equal(t, []int{18, 36, 72, 144, 288}, p.Sizes)
	assert.Equal(t, 4, p.ModuleLevel)
	assert.Empty(t, p.Warnings)
	aggs, err := SlurmAggregates(len(p.Blocks), p.Sizes)
	require.NoError(t, err)
	top4 := 0
	for _, a := range aggs {
		mods := map[string]bool{}
		for i := a.First; i <= a.Last; i++ {
			mods[p.Blocks[i].Module] = true
		}
		require.Len(t, mods, 1, "aggregate %+v stays in one module", a)
		if a.Level == 4 {
			top4++
			assert.Equal(t, 16, a.Last-a.First+1, "the 288 level is a whole module")
		}
	}
	assert.Equal(t, 3, top4)
	assert.Len(t, aggs, 3*(8+4+2+1))
}

// Slurm's aggregation, worked by hand from block_record.c: the last,
// shorter run is aggregated only when it is longer than the level below.
func TestSlurmAggregates(t *testing.T) {
	aggs, err := SlurmAggregates(6, []int{4, 8, 16})
	require.NoError(t, err)
	assert.Equal(t, []Aggregate{{1, 0, 1}, {1, 2, 3}, {1, 4, 5}, {2, 0, 3}}, aggs, "blocks 4-5: 4 > 2 remaining and 2 >= 2: no level-2 block")
	aggs, err = SlurmAggregates(5, []int{4, 8, 16})
	require.NoError(t, err)
	assert.Equal(t, []Aggregate{{1, 0, 1}, {1, 2, 3}, {2, 0, 3}}, aggs, "block 4 alone: 2 > 1 remaining and 1 >= 1")
	_, err = SlurmAggregates(4, []int{18, 30})
	assert.ErrorContains(t, err, "not 18 times a power of two")
}

// Module sizes that are not a power of two, or differ, stop the levels
// below a module, with a warning; uneven racks set the base.
func TestPlanBlocksWarnings(t *testing.T) {
	build := func(racks map[string]int, nodes func(m string, r int) int) *Topology {
		var recs []*inventory.NodeRecord
		for m, n := range racks {
			for r := 1; r <= n; r++ {
				for i := 1; i <= nodes(m, r); i++ {
					rack := m + "-r" + pad2(r)
					recs = append(recs, &inventory.NodeRecord{Node: rack + "-n" + pad2(i), Module: m, Rack: rack})
				}
			}
		}
		top, err := FromRecords("t", recs, RecordOptions{})
		require.NoError(t, err)
		return top
	}
	eighteen := func(string, int) int { return 18 }
	for _, tc := range []struct {
		name   string
		top    *Topology
		sizes  []int
		module int
		warn   string
	}{
		{"twelve racks", build(map[string]int{"ma": 12, "mb": 12}, eighteen), []int{18, 36, 72}, -1, "module ma has 12 blocks, not a power of two: no BlockSizes level is exactly the module; levels stop at 4 blocks (72 nodes)"},
		{"odd", build(map[string]int{"ma": 3}, eighteen), []int{18}, -1, "module ma has 3 blocks"},
		{"differ", build(map[string]int{"ma": 16, "mb": 8}, eighteen), []int{18, 36, 72, 144}, -1, "modules hold different numbers of blocks: 16 (ma), 8 (mb); levels stop at 8 blocks"},
		{"one short rack", build(map[string]int{"ma": 4}, func(_ string, r int) int { return 18 - btoi(r == 3) }), []int{17, 34, 68}, 2, "blocks hold 17 to 18 nodes: the base block size is the smallest, 17 (block ma-r03)"},
	} {
		p, err := PlanBlocks(tc.top)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.sizes, p.Sizes, tc.name)
		assert.Equal(t, tc.module, p.ModuleLevel, tc.name)
		assert.Contains(t, strings.Join(p.Warnings, "\n"), tc.warn, tc.name)
	}
}

func pad2(n int) string { return fmt.Sprintf("%02d", n) }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Bad input: each problem names the node and where it is declared.
func TestBadRecords(t *testing.T) {
	rec := func(node, module, rack string) *inventory.NodeRecord {
		return &inventory.NodeRecord{Node: node, Module: module, Rack: rack}
	}
	for _, tc := range []struct {
		name string
		recs []*inventory.NodeRecord
		err  string
	}{
		{"no rack", []*inventory.NodeRecord{rec("n1", "ma", "")}, "record 1: node n1 is in no rack: every node must hang off a leaf switch"},
		{"no module", []*inventory.NodeRecord{rec("n1", "", "r1")}, "record 1: node n1 is in no module"},
		{"duplicate", []*inventory.NodeRecord{rec("n1", "ma", "a-r1"), rec("n1", "ma", "a-r2")}, "record 2: node n1 is listed twice (first at record 1): host names must be unique"},
		{"slurm name", []*inventory.NodeRecord{rec("gpu[1]", "ma", "a-r1")}, "record 1: node gpu[1]: Slurm cannot take the name"},
		{"kubernetes name", []*inventory.NodeRecord{rec("GPU_1", "ma", "a-r1")}, `record 1: node GPU_1: Kubernetes cannot take the name "GPU_1"`},
		{"rack in two modules", []*inventory.NodeRecord{rec("n1", "ma", "r01"), rec("n2", "mb", "r01")}, "record 2: rack r01 of node n2 is in module mb, but node n1 (record 1) puts rack r01 in module ma"},
		{"collision", []*inventory.NodeRecord{rec("n1", "ma", "ma")}, "both called ma: switch names must be unique"},
		{"root", []*inventory.NodeRecord{rec("n1", "spine", "a-r1")}, "module spine and the root switch are both called spine"},
		{"long switch", []*inventory.NodeRecord{rec("n1", "ma", strings.Repeat("r", 70))}, "longer than Slurm's 64"},
	} {
		_, err := FromRecords("t", tc.recs, RecordOptions{})
		assert.ErrorContains(t, err, tc.err, tc.name)
	}
}

func TestBadDomainAcrossModules(t *testing.T) {
	recs := []*inventory.NodeRecord{
		{Node: "n1", Module: "ma", Rack: "a-r1", NVLinkDomain: "d1"},
		{Node: "n2", Module: "mb", Rack: "b-r1", NVLinkDomain: "d1"},
	}
	_, err := FromRecords("t", recs, RecordOptions{})
	require.NoError(t, err, "leaves are racks: the domain is a label only")
	_, err = FromRecords("t", recs, RecordOptions{Options: Options{Leaf: LeafDomain}})
	assert.ErrorContains(t, err, "scale-up domain d1 of node n2 is in module mb, but node n1 (record 1) puts it in module ma")
}

// A hand edit breaks the stamp's digest; a file seam did not write has
// none.
func TestStamp(t *testing.T) {
	out := render(t, small(t), RenderOptions{Format: FormatSlurmTree, Command: "contractc topology"})
	assert.Equal(t, Stamp{Generated: true, Intact: true, Command: "contractc topology"}, ReadStamp(out.Text))
	edited := bytes.Replace(out.Text, []byte("a-r01 Nodes"), []byte("a-r02 Nodes"), 1)
	assert.Equal(t, Stamp{Generated: true, Command: "contractc topology"}, ReadStamp(edited))
	assert.Equal(t, Stamp{}, ReadStamp([]byte("SwitchName=s0 Nodes=n[1-2]\n")))
}

// Kubernetes labels with the sketch's prefix are the sketch's keys
// (and the scale-up domain and generation); the zone label is opt-in.
func TestLabels(t *testing.T) {
	n := small(t).Nodes()[0]
	assert.Equal(t, map[string]string{
		"topology.example.com/module": "ma", "topology.example.com/power-block": "p1", "topology.example.com/cooling-loop": "l1",
		"topology.example.com/rack": "a-r01", "topology.example.com/scale-up-domain": "a-r01", "topology.example.com/generation": "gb300-nvl72",
	}, Labels(n, "topology.example.com", false))
	assert.Equal(t, "ma", Labels(n, "", true)[ZoneLabel])
	_, hasZone := Labels(n, "", false)[ZoneLabel]
	assert.False(t, hasZone)
}

func TestBadLabelValue(t *testing.T) {
	recs := []*inventory.NodeRecord{{Node: "n1", Module: "ma", Rack: "a-r1", PowerBlock: "p1-"}}
	top, err := FromRecords("t", recs, RecordOptions{})
	require.NoError(t, err)
	_, err = Render(top, RenderOptions{Format: FormatK8s})
	assert.ErrorContains(t, err, `record 1: node n1: label topology.seam.io/power-block="p1-"`)
}

// ParseConf reads the man page's examples and names the bad line.
func TestParseConf(t *testing.T) {
	c, err := ParseConf("t", []byte("# tree\nSwitchName=s0 Nodes=dev[0-5]\nswitchname=s1 nodes=dev[6-11] LinkSpeed=1\nSwitchName=s3 Switches=s[0-1] # root\n"))
	require.NoError(t, err)
	require.Len(t, c.Switches, 3)
	assert.Equal(t, []string{"s0", "s1"}, c.Switches[2].Switches)
	c, err = ParseConf("t", []byte("BlockName=block1 Nodes=node[1-32]\nBlockName=block2 Nodes=node[33-64]\nBlockSizes=30,120\n"))
	require.NoError(t, err)
	assert.Equal(t, []int{30, 120}, c.Sizes)
	for _, tc := range []struct{ in, err string }{
		{"SwitchName=a Nodes=n[1-\n", "t:1: Nodes=: hostlist"},
		{"SwitchName=a\nNodeName=n1\n", "t:2: NodeName= starts no line of topology.conf"},
		{"SwitchName=a Colour=red\n", "t:1: Colour= is not a parameter of a switchname line"},
		{"SwitchName=a Nodes=n1\nBlockName=b Nodes=n2\n", "both SwitchName and BlockName lines"},
		{"BlockSizes=18,x\n", `"x" is not a positive number`},
	} {
		_, err := ParseConf("t", []byte(tc.in))
		assert.ErrorContains(t, err, tc.err, tc.in)
	}
}

// CheckTree catches what slurmctld exits on (a child that is not a
// switch) and what it silently runs (two roots, a node on two leaves,
// a node Slurm does not have, a Slurm node on no leaf).
func TestCheckTree(t *testing.T) {
	sw := func(name string, nodes, switches string) Switch {
		n, _ := hostlist.Expand(nodes)
		s, _ := hostlist.Expand(switches)
		return Switch{Name: name, Nodes: n, Switches: s}
	}
	good := []Switch{sw("a", "n[1-2]", ""), sw("b", "n[3-4]", ""), sw("top", "", "a,b")}
	require.NoError(t, CheckTree(good, []string{"n1", "n2", "n3", "n4"}))
	for _, tc := range []struct {
		name  string
		sw    []Switch
		known []string
		err   string
	}{
		{"invalid child", []Switch{sw("a", "n1", ""), sw("top", "", "a,zz")}, nil, "switch top has child zz, which is not a switch"},
		{"two roots", []Switch{sw("a", "n1", ""), sw("b", "n2", "")}, nil, "2 switches have no parent (a, b)"},
		{"two parents", []Switch{sw("a", "n1", ""), sw("m1", "", "a"), sw("m2", "", "a"), sw("top", "", "m1,m2")}, nil, "switch a is under both m1 and m2"},
		{"two leaves", []Switch{sw("a", "n1", ""), sw("b", "n1", ""), sw("top", "", "a,b")}, nil, "node n1 is on two leaves, a and b"},
		{"unknown node", good, []string{"n1", "n2", "n3"}, "leaf b lists node n4, which Slurm does not have"},
		{"node on no leaf", good, []string{"n1", "n2", "n3", "n4", "n5"}, "node n5 is in Slurm but on no leaf"},
		{"empty", []Switch{sw("a", "", ""), sw("top", "", "a")}, nil, "a has neither nodes nor switches"},
	} {
		assert.ErrorContains(t, CheckTree(tc.sw, tc.known), tc.err, tc.name)
	}
}
