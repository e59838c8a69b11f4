package scheduler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return b
}

// The tree as Slurm 22.05 printed it (captured from a real slurmctld):
// leaves list their nodes, parents list every node below them expanded.
func TestParseTopologyTree(t *testing.T) {
	st, err := ParseTopology("t", read(t, "topology-tree-22.05.txt"))
	require.NoError(t, err)
	assert.Equal(t, "tree", st.Plugin)
	require.Len(t, st.Switches, 5)
	assert.Equal(t, Switch{Name: "a-r01", Level: 0, Nodes: []string{"gpu-a-r01-n01", "gpu-a-r01-n02"}, Line: 1}, st.Switches[0])
	spine := st.Switches[4]
	assert.Equal(t, "spine", spine.Name)
	assert.Equal(t, 2, spine.Level)
	assert.Equal(t, []string{"ma", "mb"}, spine.Switches)
	assert.Len(t, spine.Nodes, 4)
}

// The block plugin's lines (its print format in
// src/plugins/topology/block/topology_block.c).
func TestParseTopologyBlock(t *testing.T) {
	st, err := ParseTopology("b", read(t, "topology-block.txt"))
	require.NoError(t, err)
	assert.Equal(t, "block", st.Plugin)
	require.Len(t, st.Blocks, 6)
	assert.Equal(t, Block{Name: "b-r01", Index: 2, Nodes: []string{"gpu-b-r01-n01"}, Size: 2, Line: 3}, st.Blocks[2])
	assert.True(t, st.Blocks[4].Aggregated)
	assert.Equal(t, "a-r[01-02]", st.Blocks[4].Name)
}

func TestParseTopologyErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, err string }{
		{"empty", "", "printed nothing"},
		{"none plugin", "No topology information available\n", "no topology information"},
		{"truncated hostlist", "SwitchName=a Level=0 LinkSpeed=1 Nodes=gpu-a-r01-n[01-1\n", "t: line 1: Nodes=: hostlist \"gpu-a-r01-n[01-1\": '[' is never closed (truncated?)"},
		{"truncated level", "SwitchName=a Level=", "line 1: Level=\"\" is not a number (truncated?)"},
		{"no level", "SwitchName=a Nodes=n1\n", "without Level= (from another Slurm version?)"},
		{"another command", "NodeName=n1 Arch=x86_64\n", `line 1: "NodeName=n1 Arch=x86_64": not a line of scontrol show topology`},
		{"not key=value", "hello world\n", `"hello" is not key=value`},
		{"mixed", "SwitchName=a Level=0 Nodes=n1\nBlockName=b BlockIndex=0 Nodes=n2\n", "line 2: a BlockName line among SwitchName lines"},
	} {
		_, err := ParseTopology("t", []byte(tc.in))
		assert.ErrorContains(t, err, tc.err, tc.name)
	}
}

func TestParseSinfo2205(t *testing.T) {
	st, err := ParseSinfo("s", read(t, "sinfo-22.05.json"))
	require.NoError(t, err)
	assert.Equal(t, "22.05.8", st.Version)
	require.Len(t, st.Nodes, 4)
	assert.Equal(t, Node{Name: "gpu-a-r01-n01", State: "idle", Features: []string{"gen_gb300-nvl72"}}, st.Nodes[0])
}

// The later shape: groups per partition and state; a node in two
// partitions is one node.
func TestParseSinfoLaterShape(t *testing.T) {
	st, err := ParseSinfo("s", read(t, "sinfo-24.11-shape.json"))
	require.NoError(t, err)
	assert.Equal(t, "24.11.1", st.Version)
	require.Len(t, st.Nodes, 3)
	assert.Equal(t, "gpu-a-r01-n01", st.Nodes[0].Name)
	assert.Equal(t, []string{"gen_gb300-nvl72"}, st.Nodes[0].Features)
	assert.Equal(t, "idle+drain", st.Nodes[2].State)
}

func TestParseSinfoErrors(t *testing.T) {
	good := string(read(t, "sinfo-22.05.json"))
	for _, tc := range []struct{ name, in, err string }{
		{"empty", "", "empty: no JSON"},
		{"truncated", good[:len(good)/2], "truncated: the JSON ends inside a value"},
		{"not json", "SwitchName=a Level=0\n", "not JSON: invalid character 'S' looking for beginning of value at line 1, column 1"},
		{"another shape", `{"meta": {"slurm": {"version": {"major": "99", "minor": "01", "micro": "0"}}}, "hosts": []}`, "neither nodes[] (Slurm 22.05) nor sinfo[] (24.x) in sinfo --json of Slurm 99.01.0"},
		{"wrong type", `{"nodes": [{"name": 3}]}`, "nodes.name is a JSON number, want string, at line 1, column 22 (the output of another version?)"},
		{"errors", `{"errors": [{"error": "Unable to contact slurm controller"}], "nodes": []}`, "sinfo reported errors"},
	} {
		_, err := ParseSinfo("s", []byte(tc.in))
		assert.ErrorContains(t, err, tc.err, tc.name)
	}
}

func TestParseKubeNodes(t *testing.T) {
	in := `{"apiVersion": "v1", "kind": "List", "items": [
	  {"kind": "Node", "metadata": {"name": "b", "labels": {"x/rack": "r1"},
	    "managedFields": [{"manager": "kubectl-label", "operation": "Update", "fieldsV1": {"f:metadata": {"f:labels": {"f:x/rack": {}}}}}]},
	   "spec": {"unschedulable": true}},
	  {"kind": "Node", "metadata": {"name": "a"}}]}`
	st, err := ParseKubeNodes("k", []byte(in))
	require.NoError(t, err)
	require.Len(t, st.Nodes, 2)
	assert.Equal(t, "a", st.Nodes[0].Name)
	assert.Equal(t, []string{"kubectl-label"}, st.Nodes[1].Managers("x/rack"))
	assert.Empty(t, st.Nodes[1].Managers("x/other"))
	assert.Equal(t, "cordoned", st.Nodes[1].State)

	for _, tc := range []struct{ in, err string }{
		{`{"kind": "Pod"}`, `kind "Pod"`},
		{`{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}}]}`, "items[0] is a Pod"},
		{`{"kind": "List", "items": [{"metadata": {}}]}`, "no metadata.name"},
		{`{"kind": "List", "items": [`, "truncated"},
	} {
		_, err := ParseKubeNodes("k", []byte(tc.in))
		assert.ErrorContains(t, err, tc.err, tc.in)
	}
}

// The Slurm backend runs the commands it names, with SLURM_CONF, and
// says which one failed.
func TestSlurmBackend(t *testing.T) {
	var ran []string
	s := &Slurm{Conf: "/etc/slurm/slurm.conf", Command: Command{Exec: func(_ context.Context, env []string, name string, args ...string) ([]byte, error) {
		ran = append(ran, strings.Join(env, " ")+" "+name+" "+strings.Join(args, " "))
		switch strings.Join(args, " ") {
		case "show topology":
			return read(t, "topology-tree-22.05.txt"), nil
		case "--json":
			return read(t, "sinfo-22.05.json"), nil
		case "ping":
			return []byte("Slurmctld(primary) at vm is DOWN\n"), nil
		}
		return nil, errors.New("exit status 1: slurm_reconfigure error: Zero Bytes were transmitted or received")
	}}}
	st, err := s.Read(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "22.05.8", st.Version)
	assert.Len(t, st.Switches, 5)
	assert.Len(t, st.Nodes, 4)
	assert.Equal(t, []string{"SLURM_CONF=/etc/slurm/slurm.conf scontrol show topology", "SLURM_CONF=/etc/slurm/slurm.conf sinfo --json"}, ran)
	f, err := s.TopologyFile(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "/etc/slurm/topology.conf", f)
	assert.ErrorContains(t, s.Reconfigure(context.Background()), "scontrol reconfigure: exit status 1: slurm_reconfigure error")
	assert.ErrorContains(t, s.Up(context.Background()), "slurmctld does not answer: scontrol ping: Slurmctld(primary) at vm is DOWN")
}

// Labels are read by hand: escapes, empty and null maps, white space.
func TestKubeLabels(t *testing.T) {
	in := `{"kind": "List", "items": [
	  {"metadata": {"name": "a", "labels": { "x/k\"q" : "v\u00e9" , "y": "" }}},
	  {"metadata": {"name": "b", "labels": null}},
	  {"metadata": {"name": "c", "labels": {}}}]}`
	st, err := ParseKubeNodes("k", []byte(in))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{`x/k"q`: "vé", "y": ""}, st.Nodes[0].Labels)
	assert.Empty(t, st.Nodes[1].Labels)
	assert.Empty(t, st.Nodes[2].Labels)
	_, err = ParseKubeNodes("k", []byte(`{"kind": "List", "items": [{"metadata": {"name": "a", "labels": {"k": 3}}}]}`))
	assert.ErrorContains(t, err, "labels: k: want a string")
}

// A large list is split and decoded in parallel, to the same nodes; a
// broken item in it still gets the positioned error of one decode.
func TestKubeLargeList(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"apiVersion": "v1", "items": [`)
	for i := range 5000 {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"kind": "Node", "metadata": {"name": "n%04d", "labels": {"x/rack": "r%d", "x/s": "a,b]}\"c"},
		  "managedFields": [{"manager": "m%d", "fieldsV1": {"f:metadata": {"f:labels": {"f:x/rack": {}}}}}]}, "spec": {"unschedulable": %t}}`, i, i/18, i%3, i%7 == 0)
	}
	b.WriteString(`], "kind": "List", "metadata": {"resourceVersion": ""}}`)
	in := b.String()
	kind, raws, ok := listItems([]byte(in))
	require.True(t, ok)
	assert.Equal(t, "List", kind)
	assert.Len(t, raws, 5000)
	st, err := ParseKubeNodes("k", []byte(in))
	require.NoError(t, err)
	require.Len(t, st.Nodes, 5000)
	n := st.Nodes[4321]
	assert.Equal(t, "n4321", n.Name)
	assert.Equal(t, map[string]string{"x/rack": "r240", "x/s": `a,b]}"c`}, n.Labels)
	assert.Equal(t, []string{"m1"}, n.Managers("x/rack"))
	assert.Equal(t, "cordoned", st.Nodes[4319].State)

	broken := strings.Replace(in, `"name": "n2500"`, `"name": n2500`, 1)
	_, err = ParseKubeNodes("k", []byte(broken))
	assert.ErrorContains(t, err, "k: not JSON: invalid character '2' in literal null (expecting 'u') at line 5001, column 40")
	_, err = ParseKubeNodes("k", []byte(in[:len(in)/2]))
	assert.ErrorContains(t, err, "truncated")
}
