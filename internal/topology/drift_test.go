package topology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// scontrolShow prints a tree as slurmctld's scontrol show topology does
// (src/plugins/topology/tree: SwitchName, Level, LinkSpeed, then the
// nodes below it expanded, then its child switches).
func scontrolShow(sw []Switch) string {
	byName := map[string]Switch{}
	for _, s := range sw {
		byName[s.Name] = s
	}
	var below func(string) ([]string, int)
	below = func(name string) ([]string, int) {
		s := byName[name]
		nodes, level := slices.Clone(s.Nodes), 0
		for _, c := range s.Switches {
			n, l := below(c)
			nodes = append(nodes, n...)
			level = max(level, l+1)
		}
		return nodes, level
	}
	var b strings.Builder
	for _, s := range sw {
		nodes, level := below(s.Name)
		fmt.Fprintf(&b, "SwitchName=%s Level=%d LinkSpeed=1", s.Name, level)
		if len(nodes) > 0 {
			fmt.Fprintf(&b, " Nodes=%s", hostlist.Compress(nodes))
		}
		if len(s.Switches) > 0 {
			fmt.Fprintf(&b, " Switches=%s", hostlist.Compress(s.Switches))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// sinfoJSON writes sinfo --json in Slurm 22.05's shape.
func sinfoJSON(nodes map[string]string) []byte {
	type node struct {
		Name     string `json:"name"`
		State    string `json:"state"`
		Features string `json:"features"`
	}
	doc := struct {
		Meta   map[string]any `json:"meta"`
		Errors []any          `json:"errors"`
		Nodes  []node         `json:"nodes"`
	}{Meta: map[string]any{"Slurm": map[string]any{"version": map[string]int{"major": 22, "minor": 5, "micro": 8}, "release": "22.05.8"}}, Errors: []any{}}
	for _, name := range sortedKeys(nodes) {
		doc.Nodes = append(doc.Nodes, node{name, "idle", nodes[name]})
	}
	b, _ := json.Marshal(doc)
	return b
}

// kubeJSON writes kubectl get nodes -o json for the topology's nodes
// with seam's labels, through edit.
func kubeJSON(top *Topology, prefix string, edit func(name string, labels map[string]string) []map[string]any) []byte {
	var items []map[string]any
	for _, n := range top.Nodes() {
		labels := Labels(n, prefix, false)
		labels["kubernetes.io/hostname"] = n.Kubernetes
		var others []map[string]any
		if edit != nil {
			others = edit(n.Kubernetes, labels)
		}
		// an Update by another manager takes the fields it changed
		ours := map[string]string{}
		for k, v := range labels {
			ours[k] = v
		}
		for _, f := range others {
			for k := range f["fieldsV1"].(map[string]any)["f:metadata"].(map[string]any)["f:labels"].(map[string]any) {
				delete(ours, strings.TrimPrefix(k, "f:"))
			}
		}
		fields := append([]map[string]any{{"manager": FieldManager, "operation": "Apply", "fieldsV1": labelFields(ours)}}, others...)
		items = append(items, map[string]any{"kind": "Node", "metadata": map[string]any{"name": n.Kubernetes, "labels": labels, "managedFields": fields}})
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	return b
}

func labelFields(labels map[string]string) map[string]any {
	f := map[string]any{}
	for k := range labels {
		f["f:"+k] = map[string]any{}
	}
	return map[string]any{"f:metadata": map[string]any{"f:labels": f}}
}

func slurmState(t *testing.T, topology string, sinfo []byte) *scheduler.State {
	t.Helper()
	ts, err := scheduler.ParseTopology("scontrol show topology", []byte(topology))
	require.NoError(t, err)
	if sinfo == nil {
		return ts
	}
	ns, err := scheduler.ParseSinfo("sinfo --json", sinfo)
	require.NoError(t, err)
	return scheduler.Merge(ts, ns)
}

func features(top *Topology) map[string]string {
	out := map[string]string{}
	for _, n := range top.Nodes() {
		out[n.Slurm] = Feature(n.Generation)
	}
	return out
}

// The example against a Slurm and a Kubernetes that run its own
// topology: no drift.
func TestDriftClean(t *testing.T) {
	top := exampleTopology(t)
	st := slurmState(t, scontrolShow(top.Tree()), sinfoJSON(features(top)))
	kube, err := scheduler.ParseKubeNodes("kubectl", kubeJSON(top, DefaultLabelPrefix, nil))
	require.NoError(t, err)
	r := Drift(top, st, kube, DriftOptions{Inventory: "threemodule"})
	assert.Empty(t, r.Findings, messages(r))
	assert.Equal(t, map[string]int{"inventory_nodes": 864, "slurm_nodes": 864, "slurm_switches": 52, "kubernetes_nodes": 864}, r.Checked)
}

// Each kind of drift, named: a rack moved to another module, a node
// under the wrong rack, a node Slurm lacks, one the inventory lacks, a
// generation feature missing, mixed generations on a leaf, a
// hand-typed label, a stale label under seam's prefix, an NVLink clique
// splitting a declared domain.
func TestDriftFindings(t *testing.T) {
	top := exampleTopology(t)
	tree := top.Tree()
	for i := range tree {
		switch tree[i].Name {
		case "ma": // rack a-r05 hangs under mb in Slurm
			tree[i].Switches = slices.DeleteFunc(slices.Clone(tree[i].Switches), func(s string) bool { return s == "a-r05" })
		case "mb":
			tree[i].Switches = append(slices.Clone(tree[i].Switches), "a-r05")
		case "a-r01": // n18 cabled into rack a-r02's leaf; a stranger on a-r01
			tree[i].Nodes = append(slices.DeleteFunc(slices.Clone(tree[i].Nodes), func(s string) bool { return s == "gpu-a-r01-n18" }), "gpu-x-r01-n01")
		case "a-r02":
			tree[i].Nodes = append(slices.Clone(tree[i].Nodes), "gpu-a-r01-n18")
		case "c-r16":
			tree[i].Nodes = tree[i].Nodes[:17] // n18 is gone from Slurm
		}
	}
	feats := features(top)
	delete(feats, "gpu-c-r16-n18")
	feats["gpu-x-r01-n01"] = ""
	feats["gpu-b-r03-n04"] = "gen_gb200-nvl72" // a tray of the old generation
	st := slurmState(t, scontrolShow(tree), sinfoJSON(feats))

	kube, err := scheduler.ParseKubeNodes("kubectl", kubeJSON(top, DefaultLabelPrefix, func(name string, labels map[string]string) []map[string]any {
		switch {
		case name == "gpu-a-r03-n07.cluster.example": // kubectl label --overwrite by hand
			labels[DefaultLabelPrefix+"/rack"] = "a-r04"
			return []map[string]any{{"manager": "kubectl-label", "operation": "Update", "fieldsV1": labelFields(map[string]string{DefaultLabelPrefix + "/rack": ""})}}
		case name == "gpu-a-r03-n08.cluster.example":
			labels[DefaultLabelPrefix+"/rack-old"] = "a-r09"
		case strings.HasPrefix(name, "gpu-b-r07-"):
			clique := "8f1c.1"
			if name >= "gpu-b-r07-n10" {
				clique = "8f1c.2"
			}
			labels[CliqueLabel] = clique
		}
		return nil
	}))
	require.NoError(t, err)
	r := Drift(top, st, kube, DriftOptions{Inventory: "threemodule"})
	var text bytes.Buffer
	require.NoError(t, WriteReport(&text, r, "text"))
	golden(t, "drift.text.golden", text.Bytes())
	var md bytes.Buffer
	require.NoError(t, WriteReport(&md, r, "markdown"))
	golden(t, "drift.markdown.golden", md.Bytes())
	var js bytes.Buffer
	require.NoError(t, WriteReport(&js, r, "json"))
	golden(t, "drift.json.golden", js.Bytes())

	// the stranger on a-r01 has no generation feature: its leaf mixes too
	assert.ElementsMatch(t, []string{DriftSwitchMoved, DriftWrongRack, DriftNodeUnknown, DriftNodeMissing, DriftFeature, DriftMixedGeneration, DriftMixedGeneration,
		DriftLabelWrong, DriftLabelUnmanaged, DriftCliqueSplit}, classes(r))
}

// The block plugin's drift: a block smaller than the base size, an
// aggregated block across modules, BlockSizes other than the
// inventory's; the mixed-generation check works per block.
func TestDriftBlocks(t *testing.T) {
	top := small(t)
	in := `BlockName=a-r01 BlockIndex=0 Nodes=gpu-a-r01-n[01-02] BlockSize=2
BlockName=a-r02 BlockIndex=1 Nodes=gpu-a-r02-n01 BlockSize=2
BlockName=b-r01 BlockIndex=2 Nodes=gpu-b-r01-n[01-02],gpu-a-r02-n02 BlockSize=2
BlockName=b-r02 BlockIndex=3 Nodes=gpu-b-r02-n[01-02] BlockSize=2
AggregatedBlock=a-r02,b-r01 BlockIndex=4 Nodes=gpu-a-r02-n[01-02],gpu-b-r01-n[01-02] BlockSize=4
AggregatedBlock=a-r01,b-r02 BlockIndex=5 Nodes=gpu-a-r01-n[01-02],gpu-b-r02-n[01-02] BlockSize=8
`
	feats := features(top)
	feats["gpu-b-r02-n02"] = "gen_h100"
	r := Drift(top, slurmState(t, in, sinfoJSON(feats)), nil, DriftOptions{Inventory: "small"})
	m := messages(r)
	assert.Contains(t, m, "block a-r02 has 1 node, fewer than the base block size 2")
	assert.Contains(t, m, "aggregated block a-r02,b-r01 (4 nodes) spans modules ma, mb")
	assert.Contains(t, m, "Slurm's block sizes are 2,4,8; the inventory's are 2,4")
	assert.Contains(t, m, "node gpu-a-r02-n02: under b-r01 (module mb) in Slurm; the inventory's leaf is a-r02 (module ma)")
	assert.Contains(t, m, "block b-r02 mixes generations (gen_gb300-nvl72: gpu-b-r02-n01; gen_h100: gpu-b-r02-n02)")
}

// A saved input that cannot be read is an error naming what is wrong
// with it, not drift.
func TestDriftInputs(t *testing.T) {
	dir := t.TempDir()
	good := sinfoJSON(features(small(t)))
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	for _, tc := range []struct {
		name string
		f    scheduler.SlurmFiles
		err  string
	}{
		{"truncated sinfo", scheduler.SlurmFiles{Sinfo: write("trunc.json", good[:len(good)-20])}, "truncated: the JSON ends inside a value"},
		{"not JSON", scheduler.SlurmFiles{Sinfo: write("text.json", []byte("NODELIST NODES\n"))}, "not JSON"},
		{"another version", scheduler.SlurmFiles{Sinfo: write("v99.json", []byte(`{"meta": {"slurm": {"release": "99.11.0"}}, "partitions": []}`))}, "sinfo --json of Slurm 99.11.0: a shape seam does not read"},
		{"truncated topology", scheduler.SlurmFiles{Topology: write("topo.txt", []byte("SwitchName=a-r01 Level=0 LinkSpeed=1 Nodes=gpu-a-r01-n[01-"))}, "topo.txt: line 1: Nodes=: hostlist \"gpu-a-r01-n[01-\": '[' is never closed (truncated?)"},
	} {
		_, err := tc.f.Read(t.Context())
		assert.ErrorContains(t, err, tc.err, tc.name)
	}
}

// A fabric tree (rail-optimised: one leaf across racks) merged under
// the inventory's modules, and drift judged against it.
func TestFabricMerge(t *testing.T) {
	top := small(t)
	fabric := []byte(`# from ibnetdiscover
SwitchName=ib-leaf1 Nodes=gpu-a-r01-n01,gpu-a-r02-n01
SwitchName=ib-leaf2 Nodes=gpu-a-r01-n02,gpu-a-r02-n02x
SwitchName=ib-leaf3 Nodes=gpu-b-r01-n[01-02]
SwitchName=ib-leaf4 Nodes=gpu-b-r02-n01,gpu-a-r02-n02,gpu-a-r01-n99
SwitchName=ib-spine Switches=ib-leaf[1-4]
`)
	conf, err := ParseConf("fabric.conf", fabric)
	require.NoError(t, err)
	merged, err := MergeFabric(top, conf)
	require.NoError(t, err)
	text := string(render(t, merged, RenderOptions{Format: FormatSlurmTree}).Text)
	assert.Contains(t, text, "# leaves from the fabric (fabric.conf), modules from the inventory\n")
	assert.Contains(t, text, "\nSwitchName=ma Switches=ib-leaf[1-2]\n")
	assert.Contains(t, text, "\nSwitchName=mb Switches=b-r02,ib-leaf3\n")
	assert.Contains(t, text, "\nSwitchName=b-r02 Nodes=gpu-b-r02-n02\n", "a node on no fabric leaf keeps the inventory's")
	assert.Contains(t, text, "\nSwitchName=spine Switches=ib-leaf4,ma,mb\n", "a leaf spanning modules goes under the root")
	w := strings.Join(merged.Warnings, "\n")
	assert.Contains(t, w, "fabric leaf ib-leaf4 (fabric.conf:5) holds nodes of modules ma, mb: it goes under spine")
	assert.Contains(t, w, "the inventory's modules replace the fabric's 1 switch above its leaves")
	assert.Contains(t, w, "2 fabric nodes outside the inventory, kept on their leaves: gpu-a-r01-n99, gpu-a-r02-n02x")
	assert.Contains(t, w, "1 inventory node on no fabric leaf, kept on the inventory's leaf: gpu-b-r02-n02")
	conf2, err := ParseConf("merged", render(t, merged, RenderOptions{Format: FormatSlurmTree}).Text)
	require.NoError(t, err)
	require.NoError(t, CheckTree(conf2.Switches, nil))

	// drift against a Slurm running the merged tree: none, and the
	// report says the leaves' truth is the fabric
	r := Drift(merged, slurmState(t, scontrolShow(merged.Tree()), nil), nil, DriftOptions{Inventory: "small"})
	assert.Empty(t, r.Findings, messages(r))
	assert.Equal(t, "leaves from the fabric tree fabric.conf; modules from the inventory", r.Truth)
	_, err = Render(merged, RenderOptions{Format: FormatSlurmBlock})
	assert.ErrorContains(t, err, "leaves spanning modules (from a fabric tree) cannot be blocks")
}

// The label plan of a dry run: what server-side apply would change.
func TestPlanLabels(t *testing.T) {
	top := small(t)
	kube, err := scheduler.ParseKubeNodes("kubectl", kubeJSON(top, DefaultLabelPrefix, func(name string, labels map[string]string) []map[string]any {
		switch name {
		case "gpu-a-r01-n01":
			labels[DefaultLabelPrefix+"/rack"] = "a-r09"
		case "gpu-a-r01-n02":
			delete(labels, DefaultLabelPrefix+"/generation")
		case "gpu-b-r02-n02":
			labels[DefaultLabelPrefix+"/old"] = "x"
			return []map[string]any{{"manager": "kubectl-label", "fieldsV1": labelFields(map[string]string{DefaultLabelPrefix + "/old": ""})}}
		}
		return nil
	}))
	require.NoError(t, err)
	kube.Nodes = kube.Nodes[:len(kube.Nodes)-2] // two nodes not in Kubernetes
	kube.Nodes = append(kube.Nodes, scheduler.Node{Name: "gpu-b-r02-n02", Labels: map[string]string{DefaultLabelPrefix + "/old": "x"}, LabelManagers: map[string][]string{DefaultLabelPrefix + "/old": {"kubectl-label"}}})
	p := PlanLabels(top, kube, "", false)
	assert.Equal(t, `  ~ topology.seam.io/rack=a-r09 → a-r01 on gpu-a-r01-n01
  + topology.seam.io/generation=gb300-nvl72 on gpu-a-r01-n02,gpu-b-r02-n02
  + topology.seam.io/cooling-loop=l2 on gpu-b-r02-n02
  + topology.seam.io/module=mb on gpu-b-r02-n02
  + topology.seam.io/power-block=p2 on gpu-b-r02-n02
  + topology.seam.io/rack=b-r02 on gpu-b-r02-n02
  + topology.seam.io/scale-up-domain=b-r02 on gpu-b-r02-n02
  - topology.seam.io/old=x on gpu-b-r02-n02 (not set by seam-topology: server-side apply leaves it; remove it by hand)
  ! 1 node not in Kubernetes, skipped (server-side apply would create them): gpu-b-r02-n01
`, p.Format())
}
