package burnin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/burnin/ingest"
)

// singles runs each node's diagnostic, telemetry and single-node
// all-reduce.
func (r *runner) singles(ctx context.Context) {
	r.addTotal(3 * len(r.res.Nodes))
	forEach(len(r.res.Nodes), func(i int) {
		n := r.res.Nodes[i]
		for _, step := range []func(context.Context, *NodeResult){r.diag, r.telemetry, r.single} {
			if n.silent {
				r.progress("skipped", []string{n.Name}, "the node did not answer")
				continue
			}
			step(ctx, n)
		}
	})
}

func (r *runner) problem(n *NodeResult, format string, args ...any) {
	r.res.mu.Lock()
	n.Problems = append(n.Problems, fmt.Sprintf(format, args...))
	r.res.mu.Unlock()
}

func (r *runner) diag(ctx context.Context, n *NodeResult) {
	file := "nodes/" + n.Name + "/dcgmi-diag.json"
	out := r.run(ctx, Job{Step: "diag", Nodes: []string{n.Name}, Command: r.cfg.Vendor.Diag(r.cfg.DiagLevel)})
	r.res.keep(file, out.Stdout)
	if out.Err != nil && out.Exit == 0 {
		r.problem(n, "node %s: diagnostic (%s): %v", n.Name, file, out.Err)
		r.unread(n)
		r.silence(n, out.Err)
		r.progress("diag", []string{n.Name}, "no answer")
		return
	}
	d, err := r.cfg.Vendor.ParseDiag(file, out.Stdout, out.Exit)
	if err != nil {
		r.problem(n, "node %s: diagnostic: %v", n.Name, err)
		r.unread(n)
		r.progress("diag", []string{n.Name}, "unreadable")
		return
	}
	n.Diag = d
	ps := d.Problems()
	for _, p := range ps {
		r.problem(n, "node %s: dcgmi diag -r %d (%s, DCGM %s): %s", n.Name, r.cfg.DiagLevel, file, d.Version, p)
	}
	status := "pass"
	if len(ps) > 0 {
		status = fmt.Sprintf("FAIL (%d)", len(ps))
	}
	r.progress("diag", []string{n.Name}, status)
}

// unread marks a node one of whose own steps gave no reading: the
// pairs it was in are no evidence against its partners.
func (r *runner) unread(n *NodeResult) {
	r.res.mu.Lock()
	n.unread = true
	r.res.mu.Unlock()
}

// checkModel holds a node whose telemetry reads another GPU model than
// the inventory lists for its tray: the tool's name is not taken on
// trust (the node's cohort, and its floors, go by it).
func (r *runner) checkModel(n *NodeResult, file string, gs []ingest.GPUTelemetry) {
	if n.GPUModel == "" {
		return
	}
	var odd []string
	for _, g := range gs {
		if g.Name != "" && !sameGPUModel(g.Name, n.GPUModel) && !slices.Contains(odd, g.Name) {
			odd = append(odd, g.Name)
		}
	}
	if len(odd) == 0 {
		return
	}
	tray := ""
	if n.Serial != "" {
		tray = " (serial " + n.Serial + ")"
	}
	tool := "telemetry"
	if len(r.cfg.Vendor.Telemetry) > 0 {
		tool = r.cfg.Vendor.Telemetry[0]
	}
	r.problem(n, "node %s: %s (%s) reads GPU model %s, but the inventory has %s for its tray%s: a tray of another generation sits in its slot, or the inventory is wrong; check the tray against its inventory record, then swap the tray or correct the inventory, and burn the node in again",
		n.Name, tool, file, strings.Join(odd, ", "), n.GPUModel, tray)
}

// sameGPUModel reports whether a GPU name a tool read and a model the
// inventory lists are one GPU: the same family token ("NVIDIA H100 80GB
// HBM3" and "H100 SXM5"; a Grace superchip's "NVIDIA GB300" and its
// "B300" GPUs). Either without a family token is not judged.
func sameGPUModel(read, inventory string) bool {
	a, b := gpuFamily(read), gpuFamily(inventory)
	return a == "" || b == "" || a == b
}

// gpuFamily is a model's first token of letters and digits past the
// vendor's name, lowercased, a Grace superchip's G dropped: "b300",
// "h100", "mi300x".
func gpuFamily(model string) string {
	for _, f := range strings.FieldsFunc(strings.ToLower(model), func(c rune) bool { return c == ' ' || c == '-' || c == '_' || c == '/' || c == ',' }) {
		if f == "nvidia" || f == "amd" || !strings.ContainsAny(f, "0123456789") || !strings.ContainsAny(f, "abcdefghijklmnopqrstuvwxyz") {
			continue
		}
		if len(f) > 2 && f[0] == 'g' && (f[1] == 'b' || f[1] == 'h') {
			f = f[1:]
		}
		return f
	}
	return ""
}

// silence marks a node that did not answer in time: its remaining
// single-node steps are not tried (each would wait its timeout again).
func (r *runner) silence(n *NodeResult, err error) {
	if errors.Is(err, context.DeadlineExceeded) {
		r.res.mu.Lock()
		n.silent, n.unread = true, true
		n.Problems = append(n.Problems, fmt.Sprintf("node %s: did not answer in time: its other steps are not tried", n.Name))
		r.res.mu.Unlock()
	}
}

func (r *runner) telemetry(ctx context.Context, n *NodeResult) {
	file := "nodes/" + n.Name + "/nvidia-smi.csv"
	out := r.run(ctx, Job{Step: "telemetry", Nodes: []string{n.Name}, Command: r.cfg.Vendor.Telemetry})
	r.res.keep(file, out.Stdout)
	if out.Err != nil || out.Exit != 0 {
		r.problem(n, "node %s: telemetry (%s): exit %d: %v", n.Name, file, out.Exit, out.Err)
		r.unread(n)
		r.silence(n, out.Err)
		r.progress("telemetry", []string{n.Name}, "no answer")
		return
	}
	gs, err := r.cfg.Vendor.ParseTelemetry(file, out.Stdout)
	if err != nil {
		r.problem(n, "node %s: telemetry: %v", n.Name, err)
		r.unread(n)
		r.progress("telemetry", []string{n.Name}, "unreadable")
		return
	}
	n.GPUs = gs
	if len(gs) > 0 {
		n.SKU = gs[0].Name
	}
	if len(gs) != r.cfg.GPUs {
		r.problem(n, "node %s: %s lists %d GPUs, want %d", n.Name, file, len(gs), r.cfg.GPUs)
	}
	r.checkModel(n, file, gs)
	temp, power, clock := math.Inf(-1), 0.0, math.Inf(1)
	for _, g := range gs {
		if !g.Has["temperature.gpu"] || !g.Has["power.draw"] {
			r.problem(n, "node %s: %s: GPU %d reports no temperature or power ([N/A]): not a reading", n.Name, file, g.Index)
			r.unread(n)
			continue
		}
		temp = math.Max(temp, g.TempC)
		power += g.PowerW
		if g.MaxClock > 0 {
			clock = math.Min(clock, g.SMClock/g.MaxClock)
		}
		if g.ECCUncorrected > 0 {
			r.problem(n, "node %s: GPU %d (serial %s): %.0f uncorrectable ECC errors (%s)", n.Name, g.Index, g.Serial, g.ECCUncorrected, file)
		}
		if g.Throttle&(0x20|0x40) != 0 {
			r.problem(n, "node %s: GPU %d (serial %s) is thermally throttled under load: clocks event reasons 0x%x (%s)", n.Name, g.Index, g.Serial, g.Throttle, file)
		}
	}
	if !math.IsInf(temp, 0) {
		n.Measures[MeasureTemp] = temp
		n.Measures[MeasurePower] = power
	}
	if !math.IsInf(clock, 0) {
		n.Measures[MeasureClock] = clock
	}
	r.progress("telemetry", []string{n.Name}, fmt.Sprintf("%d GPUs, max %.0f °C, %.0f W", len(gs), temp, power))
}

func (r *runner) single(ctx context.Context, n *NodeResult) {
	file := "nodes/" + n.Name + "/all_reduce_perf.txt"
	bw, err := r.collective(ctx, "single", file, []string{n.Name})
	if err != nil {
		r.problem(n, "node %s: single-node all-reduce: %v", n.Name, err)
		r.unread(n)
		r.progress("single", []string{n.Name}, "failed")
		return
	}
	r.res.mu.Lock()
	n.Measures[MeasureBusBW] = bw
	n.answered = true
	r.res.mu.Unlock()
	r.progress("single", []string{n.Name}, fmt.Sprintf("busbw %.1f GB/s", bw))
}
