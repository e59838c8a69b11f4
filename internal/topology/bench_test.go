package topology

import (
	"context"
	"fmt"
	"testing"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/scheduler"
)

// benchNodes is the benchmarks' site size.
const benchNodes = 100_000

// bigRecords is a site of n nodes as the brief's records: racks of 18,
// modules of 32 racks (the last rack and module partly filled).
func bigRecords(n int) []*inventory.NodeRecord {
	recs := make([]*inventory.NodeRecord, 0, n)
	for i := range n {
		rack, mod := i/18, i/(18*32)
		rackName := fmt.Sprintf("m%03d-r%02d", mod, rack%32+1)
		recs = append(recs, &inventory.NodeRecord{Node: fmt.Sprintf("gpu-%s-n%02d", rackName, i%18+1), Module: fmt.Sprintf("m%03d", mod),
			PowerBlock: fmt.Sprintf("p%03d", mod), CoolingLoop: fmt.Sprintf("l%03d", mod), Rack: rackName, NVLinkDomain: rackName})
	}
	return recs
}

// Topology for 100,000 nodes, from records to every format (goal: under
// a second for all of them).
func BenchmarkTopology100k(b *testing.B) {
	recs := bigRecords(benchNodes)
	b.Run("all-formats", func(b *testing.B) {
		for b.Loop() {
			top, err := FromRecords("big", recs, RecordOptions{Generation: "gb300-nvl72"})
			if err != nil {
				b.Fatal(err)
			}
			for _, f := range Formats {
				if _, err := Render(top, RenderOptions{Format: f}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(benchNodes), "nodes")
	})
	top, err := FromRecords("big", recs, RecordOptions{Generation: "gb300-nvl72"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("model", func(b *testing.B) {
		for b.Loop() {
			if _, err := FromRecords("big", recs, RecordOptions{Generation: "gb300-nvl72"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, f := range Formats {
		b.Run(f, func(b *testing.B) {
			var size int
			for b.Loop() {
				out, err := Render(top, RenderOptions{Format: f})
				if err != nil {
					b.Fatal(err)
				}
				size = len(out.Text)
			}
			b.ReportMetric(float64(size), "bytes")
		})
	}
}

// Drift of 100,000 nodes: parse a saved scontrol show topology, sinfo
// --json and kubectl get nodes -o json, and compare (goal: under 2 s),
// with a moved rack and a hand-typed label in them.
func BenchmarkDrift100k(b *testing.B) {
	top, err := FromRecords("big", bigRecords(benchNodes), RecordOptions{Generation: "gb300-nvl72"})
	if err != nil {
		b.Fatal(err)
	}
	tree := top.Tree()
	for i := range tree {
		if tree[i].Name == "m000" {
			tree[i].Switches = tree[i].Switches[1:]
		}
		if tree[i].Name == "m001" {
			tree[i].Switches = append(tree[i].Switches, "m000-r01")
		}
	}
	topo := []byte(scontrolShow(tree))
	sinfo := sinfoJSON(features(top))
	kube := kubeJSON(top, DefaultLabelPrefix, func(name string, labels map[string]string) []map[string]any {
		if name == "gpu-m002-r03-n04" {
			labels[DefaultLabelPrefix+"/rack"] = "m002-r04"
		}
		return nil
	})
	var findings int
	for b.Loop() {
		// as contractc topology drift reads its inputs: side by side
		states, err := scheduler.ReadAll(b.Context(), saved{topo, scheduler.ParseTopology}, saved{sinfo, scheduler.ParseSinfo}, saved{kube, scheduler.ParseKubeNodes})
		if err != nil {
			b.Fatal(err)
		}
		r := Drift(top, scheduler.Merge(states[0], states[1]), states[2], DriftOptions{})
		findings = len(r.Findings)
	}
	if findings != 2 {
		b.Fatalf("want the moved rack and the hand-typed label, got %d findings", findings)
	}
	b.ReportMetric(float64(benchNodes), "nodes")
	b.ReportMetric(float64(len(topo)+len(sinfo)+len(kube))/1e6, "input-MB")
}

// saved is a command's output in memory.
type saved struct {
	b     []byte
	parse func(string, []byte) (*scheduler.State, error)
}

func (s saved) Read(context.Context) (*scheduler.State, error) { return s.parse("saved", s.b) }
