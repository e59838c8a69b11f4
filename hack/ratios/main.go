// Command ratios prints the figures issue 23 names beside their goals,
// for make bench: contractc vet against cue vet -c and contractc compile
// --level all against contractc vet (whole processes on a generated
// 100-module site, median CPU of five runs), the plan's size, and the
// Modbus probe's rate against the bare client from a bench output.
//
//	go run ./hack/ratios -cue out/cue -contractc bin/contractc -bench out/bench.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/contracts/schema"
	"github.com/seamdc/seam/internal/sitegen"
)

func main() {
	cueBin := flag.String("cue", "", "the cue command")
	contractc := flag.String("contractc", "bin/contractc", "the contractc command")
	bench := flag.String("bench", "", "a go test -bench output holding BenchmarkModbusProbeVsBare")
	runs := flag.Int("runs", 5, "runs of each command; the median counts")
	flag.Parse()
	// the cue command runs in the bound site's directory
	abs, err := filepath.Abs(*cueBin)
	if err != nil || *cueBin == "" {
		fmt.Fprintln(os.Stderr, "ratios: -cue names the cue command (make bench builds it from hack/cue)")
		os.Exit(1)
	}
	*cueBin = abs
	if err := run(os.Stdout, *cueBin, *contractc, *bench, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "ratios:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, cueBin, contractc, bench string, runs int) error {
	tmp, err := os.MkdirTemp("", "seam-ratios-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	site := filepath.Join(tmp, "site")
	if err := sitegen.Write(site, 100); err != nil {
		return err
	}
	bound, err := bindSchema(site, filepath.Join(tmp, "cue"))
	if err != nil {
		return err
	}
	planFile := filepath.Join(tmp, "all.json")
	cueCPU, err := medianCPU(runs, bound, cueBin, "vet", "-c", ".")
	if err != nil {
		return err
	}
	vetCPU, err := medianCPU(runs, "", contractc, "vet", site)
	if err != nil {
		return err
	}
	compileCPU, err := medianCPU(runs, "", contractc, "compile", site, "--level", "all", "-o", planFile)
	if err != nil {
		return err
	}
	fi, err := os.Stat(planFile)
	if err != nil {
		return err
	}
	probe := "not in " + bench
	if pct, ok := probeRatio(bench); ok {
		probe = verdict(pct >= 80, fmt.Sprintf("%.0f %%", pct))
	}
	fmt.Fprintf(w, "\nissue 23's figures, on a generated 100-module site (median CPU of %d runs):\n", runs)
	fmt.Fprintf(w, "  %-46s %-14s %s\n", "figure", "measured", "goal")
	vr, cr := vetCPU.Seconds()/cueCPU.Seconds(), compileCPU.Seconds()/vetCPU.Seconds()
	fmt.Fprintf(w, "  %-46s %-14s %s\n", "contractc vet / cue vet -c, CPU", verdict(vr <= 1.25, fmt.Sprintf("%.2f×", vr)),
		fmt.Sprintf("≤ 1.25× (%.2f s / %.2f s)", vetCPU.Seconds(), cueCPU.Seconds()))
	fmt.Fprintf(w, "  %-46s %-14s %s\n", "contractc compile --level all / vet, CPU", verdict(cr <= 1.5, fmt.Sprintf("%.2f×", cr)),
		fmt.Sprintf("≤ 1.5× (%.2f s)", compileCPU.Seconds()))
	fmt.Fprintf(w, "  %-46s %-14s %s\n", "plan size, --level all", fmt.Sprintf("%.1f MB", float64(fi.Size())/1e6), "")
	fmt.Fprintf(w, "  %-46s %-14s %s\n", "Modbus probe / bare client, requests per s", probe, "≥ 80 %")
	// issue 37: what the grid rules add to vet on the same site, 50
	// iteration periods swept, with the mitigation search a failing
	// design needs
	for _, tt := range []struct{ name, prefix string }{
		{"GRID rules added to vet, a passing design", "BenchmarkGrid/passing"},
		{"GRID rules added to vet, failing (with advice)", "BenchmarkGrid/failing"},
	} {
		grid := "not in " + bench
		if s, ok := benchMetric(bench, tt.prefix, "grid-s"); ok {
			grid = verdict(s < 0.5, fmt.Sprintf("%.2f s", s))
		}
		fmt.Fprintf(w, "  %-46s %-14s %s\n", tt.name, grid, "< 0.5 s")
	}
	// issue 38: grading the meter's power (five grid checks, CPU), and
	// the simulator with the grid job on 1,728 nodes, its meter polled
	// at 50 samples/s
	for _, tt := range []struct {
		name, prefix, metric, unit string
		goal                       float64
	}{
		{"grid grading (ramp, line), 1 h at 50 samples/s", "BenchmarkGrid/1h@50Hz/ramp+line", "cpu-ms/op", "ms", 50},
		{"grid grading (ramp, line), 10 min at 1 kHz", "BenchmarkGrid/10min@1kHz/ramp+line", "cpu-ms/op", "ms", 200},
		{"sim, grid job on 1,728 nodes, meter at 50/s", "BenchmarkServedFleet/nodes=1728/grid-job", "%core-polled", "% of a core", 25},
	} {
		got := "not in " + bench
		if v, ok := benchMetric(bench, tt.prefix, tt.metric); ok {
			got = verdict(v < tt.goal, fmt.Sprintf("%.1f %s", v, tt.unit))
		}
		fmt.Fprintf(w, "  %-46s %-14s %s\n", tt.name, got, fmt.Sprintf("< %g %s", tt.goal, tt.unit))
	}
	return nil
}

func verdict(ok bool, s string) string {
	if ok {
		return s
	}
	return s + " MISSED"
}

// bindSchema copies the generated site into dir with the schema as a
// CUE module dependency and the binding contractc adds, so cue vet -c
// evaluates what contractc vet does.
func bindSchema(site, dir string) (string, error) {
	gen := filepath.Join(dir, "cue.mod", "gen", filepath.FromSlash(schema.ImportPath))
	if err := os.MkdirAll(gen, 0o755); err != nil {
		return "", err
	}
	for name, b := range schema.Files() {
		if err := os.WriteFile(filepath.Join(gen, name), b, 0o644); err != nil {
			return "", err
		}
	}
	files, err := filepath.Glob(filepath.Join(site, "*.cue"))
	if err != nil {
		return "", err
	}
	pkg := ""
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if pkg == "" {
			pkg = packageOf(b)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			return "", err
		}
	}
	if pkg == "" {
		return "", fmt.Errorf("%s: no package clause in the generated files", site)
	}
	module := "module: \"seam.example/ratios@v0\"\nlanguage: version: \"v0.17.1\"\n"
	if err := os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte(module), 0o644); err != nil {
		return "", err
	}
	bind := "package " + pkg + "\n\n" + schema.Bind
	return dir, os.WriteFile(filepath.Join(dir, "zz_bind.cue"), []byte(bind), 0o644)
}

func packageOf(b []byte) string {
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "package "); ok {
			return strings.TrimSpace(p)
		}
	}
	return ""
}

// medianCPU runs the command n times and returns the median of its user
// plus system CPU time.
func medianCPU(n int, dir, name string, args ...string) (time.Duration, error) {
	var cpu []time.Duration
	for range n {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
		}
		cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	slices.Sort(cpu)
	return cpu[len(cpu)/2], nil
}

// probeRatio is the median %of-bare of BenchmarkModbusProbeVsBare's
// lines in a bench output.
func probeRatio(bench string) (float64, bool) {
	return benchMetric(bench, "BenchmarkModbusProbeVsBare", "%of-bare")
}

// benchMetric is the median of a benchmark's metric in bench.txt, over
// every line whose name starts with prefix.
func benchMetric(bench, prefix, metric string) (float64, bool) {
	f, err := os.Open(bench)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var pcts []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.HasPrefix(fields[0], prefix) {
			continue
		}
		for i := 1; i < len(fields); i++ {
			if fields[i] == metric {
				if v, err := strconv.ParseFloat(fields[i-1], 64); err == nil {
					pcts = append(pcts, v)
				}
			}
		}
	}
	if len(pcts) == 0 {
		return 0, false
	}
	slices.Sort(pcts)
	return pcts[len(pcts)/2], true
}
