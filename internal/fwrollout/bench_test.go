package fwrollout

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/firmware"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/redfish/bmc"
	"github.com/seamdc/seam/internal/sim/fleet/fleettest"
)

// BenchmarkRollout1000 rolls a BIOS update out to 1,000 simulated BMCs
// of the example site (its compute and switch trays, on loopback, each
// fetching its image over TLS from seam's image server): a simulated
// 60 s per update, 64 at once, one rack of each module per stage, the
// holds in a ledger over a fake scheduler, every step journaled in a
// signed bundle. Site time is the simulated site's (lockstep), so the
// overhead reported is seam's own waits beyond the updates' 60 s per
// wave of 64 trays (goal: under 2 s a stage); wall s/stage is what it
// costs on this machine.
func BenchmarkRollout1000(b *testing.B) {
	f := fleettest.Example(b)
	var trays []string
	for _, w := range f.BMCs() {
		if w.Kind == inventory.KindCompute || w.Kind == inventory.KindScaleUpSwitch {
			trays = append(trays, w.Key)
		}
	}
	// racks in order of their number, then module: stage k takes rack k
	// of every module
	slices.SortFunc(trays, func(a, c string) int { return strings.Compare(rackOrder(a), rackOrder(c)) })
	trays = trays[:1000]
	var over, worst, wall, site time.Duration
	stages := 0
	for b.Loop() {
		b.StopTimer()
		s := newSite(b, trays, bmc.Config{UpdateDuration: 60 * time.Second})
		s.plan = s.benchPlan(trays)
		var began time.Time
		var wallBegan time.Time
		cfg := s.config(bundleJournal{s.bundle(filepath.Join(b.TempDir(), "ev"))}, nil)
		cfg.Progress = func(format string, args ...any) {
			switch {
			case strings.HasSuffix(format, "out of the pool"):
				began, wallBegan = s.clk.Now(), time.Now()
			case strings.HasPrefix(format, "stage %d: passed"):
				st := s.plan.Stages[args[0].(int)-1]
				waves := (len(st.Trays) + 63) / 64
				site += s.clk.Now().Sub(began)
				o := s.clk.Now().Sub(began) - time.Duration(waves)*time.Minute
				over += o
				worst = max(worst, o)
				wall += time.Since(wallBegan)
				stages++
			}
		}
		b.StartTimer()
		if _, err := s.run(cfg, context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, key := range trays {
			if n := s.updates(key)["bios"]; n != 1 {
				b.Fatalf("%s: %d BIOS updates, want 1", key, n)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(stages)/float64(b.N), "stages")
	b.ReportMetric((site / time.Duration(stages)).Seconds(), "site-s/stage")
	b.ReportMetric((over / time.Duration(stages)).Seconds(), "site-s-overhead/stage")
	b.ReportMetric(worst.Seconds(), "site-s-overhead-max")
	b.ReportMetric((wall / time.Duration(stages)).Seconds(), "wall-s/stage")
}

// rackOrder sorts ma/r03/compute-01 as r03 ma compute-01.
func rackOrder(key string) string {
	parts := strings.SplitN(key, "/", 3)
	return parts[1] + " " + parts[0] + " " + parts[2]
}

// benchPlan is one stage per rack number (a rack of each module), each
// tray's BIOS applied at once with no reset: its update is the whole
// of its time.
func (s *site) benchPlan(trays []string) *firmware.Plan {
	p := &firmware.Plan{Format: firmware.Format, Site: "bench", Rollout: "fw-bench", Baseline: firmware.Input{Digest: "sha256:00"}}
	byRack := map[string]*firmware.Stage{}
	for _, key := range trays {
		rack := strings.SplitN(key, "/", 3)[1]
		st := byRack[rack]
		if st == nil {
			st = &firmware.Stage{Number: len(p.Stages) + 1}
			st.Holds = []firmware.PlannedHold{{Owner: hold.Of(hold.Firmware, fmt.Sprintf("fw-bench-s%02d", st.Number)), Why: "firmware rollout"}}
			byRack[rack] = st
			p.Stages = append(p.Stages, st)
		}
		if r := filepath.Dir(key); !slices.Contains(st.Racks, r) {
			st.Racks = append(st.Racks, r)
		}
		if strings.Contains(key, "compute") {
			st.Nodes = append(st.Nodes, firmware.StageNode{Key: key, Name: nodeName(key), Action: firmware.NodeUpdate})
			st.Holds[0].Nodes = append(st.Holds[0].Nodes, key)
		}
		st.Trays = append(st.Trays, &firmware.TrayPlan{Key: key, Node: key, Updates: []firmware.Update{
			{Component: "bios", From: from["bios"], To: to["bios"], SHA256: s.sums["bios"], ApplyTime: firmware.Immediate, Reset: firmware.ResetNone},
		}})
	}
	return p
}
