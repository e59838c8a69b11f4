// Command ratios prints the figures issues 23 and 42 name beside their
// goals, for make bench: contractc vet against cue vet -c and contractc
// compile --level all against contractc vet (whole processes on a
// generated 100-module site, median CPU of five runs, on the machine as
// it is and again beside busy loops), the plan's size, and from a bench
// output the Modbus probe's rate against the bare client, the grid
// figures and the inventory's build and check at 100,000 nodes.
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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	cmds := cpuCommands{
		cue:     command{bound, cueBin, []string{"vet", "-c", "."}},
		vet:     command{"", contractc, []string{"vet", site}},
		compile: command{"", contractc, []string{"compile", site, "--level", "all", "-o", planFile}},
	}
	idle, err := cmds.measure(runs)
	if err != nil {
		return err
	}
	stop := busy(2 * runtime.NumCPU())
	loaded, err := cmds.measure(runs)
	stop()
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
	fmt.Fprintf(w, "\nissues 23 and 42's figures, on a generated 100-module site (median CPU of %d runs; loaded: %d busy loops beside them):\n", runs, 2*runtime.NumCPU())
	fmt.Fprintf(w, "  %-50s %-14s %s\n", "figure", "measured", "goal")
	for _, m := range []struct {
		name string
		cpu  cpuSet
	}{{"idle", idle}, {"loaded", loaded}} {
		vr, cr := m.cpu.vet.Seconds()/m.cpu.cue.Seconds(), m.cpu.compile.Seconds()/m.cpu.vet.Seconds()
		fmt.Fprintf(w, "  %-50s %-14s %s\n", "vet / cue vet -c, CPU, "+m.name, verdict(vr <= 1.25, fmt.Sprintf("%.2f×", vr)),
			fmt.Sprintf("≤ 1.25× (%.2f s / %.2f s)", m.cpu.vet.Seconds(), m.cpu.cue.Seconds()))
		fmt.Fprintf(w, "  %-50s %-14s %s\n", "compile --level all / vet, CPU, "+m.name, verdict(cr <= 1.5, fmt.Sprintf("%.2f×", cr)),
			fmt.Sprintf("≤ 1.5× (%.2f s)", m.cpu.compile.Seconds()))
	}
	fmt.Fprintf(w, "  %-50s %-14s %s\n", "plan size, --level all", fmt.Sprintf("%.1f MB", float64(fi.Size())/1e6), "")
	fmt.Fprintf(w, "  %-50s %-14s %s\n", "Modbus probe / bare client, requests per s", probe, "≥ 80 %")
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
		fmt.Fprintf(w, "  %-50s %-14s %s\n", tt.name, grid, "< 0.5 s")
	}
	// issue 38: grading the meter's power (five grid checks, CPU), and
	// the simulator with the grid job on 1,728 nodes, its meter polled
	// at 50 samples/s; issue 42: the inventory at site scale
	for _, tt := range []struct {
		name, prefix, metric, unit string
		goal                       float64
	}{
		{"grid grading (ramp, line), 1 h at 50 samples/s", "BenchmarkGrid/1h@50Hz/ramp+line", "cpu-ms/op", "ms", 50},
		{"grid grading (ramp, line), 10 min at 1 kHz", "BenchmarkGrid/10min@1kHz/ramp+line", "cpu-ms/op", "ms", 200},
		{"sim, grid job on 1,728 nodes, meter at 50/s", "BenchmarkServedFleet/nodes=1728/grid-job", "%core-polled", "% of a core", 25},
		// issue 42: the inventory of 100,000 nodes and 1,000,000 parts
		{"inventory of 100,000 nodes: build + check", "BenchmarkBuildCheck", "buildcheck-s", "s", 2},
		{"inventory of 100,000 nodes: memory from the OS", "BenchmarkBuildCheck", "sys-MB", "MB", 1024},
	} {
		got := "not in " + bench
		if v, ok := benchMetric(bench, tt.prefix, tt.metric); ok {
			got = verdict(v < tt.goal, fmt.Sprintf("%.1f %s", v, tt.unit))
		}
		fmt.Fprintf(w, "  %-50s %-14s %s\n", tt.name, got, fmt.Sprintf("< %g %s", tt.goal, tt.unit))
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

// command is a process to time: its directory, program and arguments.
type command struct {
	dir, name string
	args      []string
}

// cpu runs the command and returns its user plus system CPU time.
func (c command) cpu() (time.Duration, error) {
	cmd := exec.Command(c.name, c.args...)
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w\n%s", c.name, strings.Join(c.args, " "), err, out)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// cpuCommands are the commands whose CPU the ratios compare.
type cpuCommands struct{ cue, vet, compile command }

// cpuSet is the median CPU of each.
type cpuSet struct{ cue, vet, compile time.Duration }

// measure runs the commands n times in turn (cue, vet, compile, cue,
// …), so that each ratio compares runs that saw the same machine, and
// returns each one's median.
func (c cpuCommands) measure(n int) (cpuSet, error) {
	var cue, vet, compile []time.Duration
	for range n {
		for _, r := range []struct {
			cmd  command
			into *[]time.Duration
		}{{c.cue, &cue}, {c.vet, &vet}, {c.compile, &compile}} {
			d, err := r.cmd.cpu()
			if err != nil {
				return cpuSet{}, err
			}
			*r.into = append(*r.into, d)
		}
	}
	return cpuSet{cue: median(cue), vet: median(vet), compile: median(compile)}, nil
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// busy keeps n goroutines spinning, as ../shared/tools/under-load's busy
// processes do, until stop is called: the commands measured beside them
// compete for the CPU as on a shared machine. Their CPU is this
// process's, never the measured commands'.
func busy(n int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			n := 0
			for {
				select {
				case <-done:
					spin.Add(int64(n))
					return
				default:
				}
				for range 1_000_000 {
					n++
				}
			}
		})
	}
	return func() { close(done); wg.Wait() }
}

// spin is what the busy loops write, so the compiler keeps them.
var spin atomic.Int64

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
