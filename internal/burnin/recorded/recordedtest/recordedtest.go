// Package recordedtest writes, for tests and benchmarks, a site's
// recorded burn-in (internal/burnin/recorded) built from the real tool
// outputs in ../shared/samples, read in place (see its PROVENANCE.md
// files):
//   - all_reduce_perf: the A3 Mega H100 80GB HBM3 log of two 8-GPU nodes
//     (8 B to 8 GiB; 337.35 GB/s at 8 GiB), its header, table and footer
//     kept as printed, its rank lines made anew for the nodes of each run
//     (8 per node, the sample's GPU name), and for a slow node its rows'
//     time, algbw and busbw scaled;
//   - nvidia-smi: the H100 80GB HBM3 capture's query-gpu CSV under load
//     (nvidia_gpu_exporter), the columns burn-in queries
//     (ingest.TelemetryFields) with their header units as printed, its one
//     GPU's line repeated for each GPU with its index and serial changed.
//
// No dcgmi diag -j capture is public (samples/README.md): the
// diagnostics are written in DCGM 4.x's documented shape, as
// internal/burnin/ingest's testdata/dcgm fixtures are (reference/
// operate.md section E), not captured from a GPU.
package recordedtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/burnin/ingest"
	"github.com/seamdc/seam/internal/burnin/recorded"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// The samples used, under the samples directory.
const (
	A3Log   = "nccl-tests/create-a3mega-ztan-fork__h100-80gb-hbm3__a3mega-2node-16rank__all_reduce__8B-8G.txt"
	H100SMI = "nvidia-smi/nvidia_gpu_exporter-captures__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
	// GPUs per node, as in the samples.
	GPUs = 8
)

// sample is the parts of the real outputs a site is built from.
type sample struct {
	header string   // all_reduce_perf's options line
	table  []string // from the table's header to the footer
	gpu    string   // the rank lines' GPU name
	smi    []string // nvidia-smi: the header and one GPU's values, TelemetryFields' columns
}

var (
	sampleMu sync.Mutex
	cached   = map[string]sample{}
)

func readSample(tb testing.TB, samples string) sample {
	tb.Helper()
	sampleMu.Lock()
	defer sampleMu.Unlock()
	if s, ok := cached[samples]; ok {
		return s
	}
	s, err := loadSample(samples)
	if err != nil {
		tb.Fatalf("the samples are read in place from ../shared/samples: %v", err)
	}
	cached[samples] = s
	return s
}

func loadSample(samples string) (sample, error) {
	var s sample
	a3Log := filepath.Join(samples, A3Log)
	raw, err := os.ReadFile(a3Log)
	if err != nil {
		return s, err
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	s.header = lines[0]
	for i, l := range lines {
		if strings.Contains(l, "out-of-place") {
			s.table = lines[i-1:]
			break
		}
	}
	run, err := ingest.ParseNCCL(a3Log, strings.NewReader(string(raw)))
	if err != nil {
		return s, err
	}
	s.gpu = run.Ranks[0].GPU
	s.smi, err = smiColumns(filepath.Join(samples, H100SMI))
	return s, err
}

// smiColumns are the H100 capture's query-gpu CSV under load, cut to
// the columns burn-in queries.
func smiColumns(h100SMI string) ([]string, error) {
	f, err := os.Open(h100SMI)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var head, vals []string
	for state := 0; sc.Scan(); {
		l := sc.Text()
		switch {
		case state == 0 && strings.HasPrefix(l, "# load :: query-gpu (csv"):
			state = 1
		case state == 1 && strings.HasPrefix(l, "####"):
			state = 2
		case state == 2:
			head, state = strings.Split(l, ", "), 3
		case state == 3:
			vals = strings.Split(l, ", ")
			state = 4
		}
	}
	if len(head) == 0 || len(head) != len(vals) {
		return nil, fmt.Errorf("%s: no query-gpu CSV under load", h100SMI)
	}
	var h, v []string
	for _, want := range ingest.TelemetryFields {
		for i, c := range head {
			if c == want || strings.HasPrefix(c, want+" [") {
				h, v = append(h, c), append(v, vals[i])
			}
		}
	}
	if len(h) != len(ingest.TelemetryFields) {
		return nil, fmt.Errorf("%s: %d of burn-in's %d columns", h100SMI, len(h), len(ingest.TelemetryFields))
	}
	return []string{strings.Join(h, ", "), strings.Join(v, ", ")}, nil
}

// Site is a recorded burn-in written to Dir: per node its diagnostic,
// telemetry and single-node all-reduce; each rack's ring pairs; each
// rack; each module across racks; and the manifest listing them.
type Site struct {
	Dir     string
	Nodes   []burnin.Node
	Entries []recorded.Entry
	Options
	sample sample
}

// Options say how the outputs differ from the samples.
type Options struct {
	// Slow scales a node's bandwidth, and that of every run it is in
	// (the slowest member sets a ring's pace).
	Slow map[string]float64
	// Size, when set, keeps only the table's row of that many bytes,
	// as burn-in's own command (all_reduce_perf -b SIZE -e SIZE) prints
	// it; 0 keeps the sample's sweep from 8 B to 8 GiB.
	Size int64
}

// Write writes the site of nodes to dir from the samples in samples
// (../shared/samples from the test's package).
func Write(tb testing.TB, samples, dir string, nodes []burnin.Node, opt Options) *Site {
	tb.Helper()
	s := &Site{Dir: dir, Nodes: nodes, Options: opt, sample: readSample(tb, samples)}
	for _, n := range nodes {
		d := "nodes/" + n.Name + "/"
		s.Add(tb, recorded.StepDiag, d+"dcgmi-diag.json", Diag(n.Name), n.Name)
		s.Add(tb, recorded.StepTelemetry, d+"nvidia-smi.csv", s.SMI(n.Name), n.Name)
		s.AllReduce(tb, recorded.StepSingle, d+"all_reduce_perf.txt", n.Name)
	}
	racks, modules := groupBy(nodes, func(n burnin.Node) string { return n.Rack }), groupBy(nodes, func(n burnin.Node) string { return n.Module })
	for _, rack := range racks {
		for i := range rack.names {
			if len(rack.names) < 2 || (len(rack.names) == 2 && i == 1) {
				break
			}
			a, b := rack.names[i], rack.names[(i+1)%len(rack.names)]
			s.AllReduce(tb, recorded.StepPair, "pairs/"+a+"+"+b+".txt", a, b)
		}
	}
	for _, rack := range racks {
		if len(rack.names) > 1 {
			s.AllReduce(tb, recorded.StepRack, "racks/"+rack.key+".txt", rack.names...)
		}
	}
	rackOf := map[string]string{}
	for _, n := range nodes {
		rackOf[n.Name] = n.Rack
	}
	for _, m := range modules {
		if rackOf[m.names[0]] != rackOf[m.names[len(m.names)-1]] {
			s.AllReduce(tb, recorded.StepModule, "modules/"+m.key+".txt", m.names...)
		}
	}
	s.WriteManifest(tb)
	return s
}

type group struct {
	key   string
	names []string
}

func groupBy(nodes []burnin.Node, key func(burnin.Node) string) []group {
	var out []group
	at := map[string]int{}
	for _, n := range nodes {
		i, ok := at[key(n)]
		if !ok {
			i = len(out)
			at[key(n)] = i
			out = append(out, group{key: key(n)})
		}
		out[i].names = append(out[i].names, n.Name)
	}
	return out
}

// Add writes a file and lists it (WriteManifest writes the list); a
// group's nodes are listed as one Slurm host list.
func (s *Site) Add(tb testing.TB, step, file, text string, nodes ...string) {
	tb.Helper()
	p := filepath.Join(s.Dir, file)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	s.Entries = append(s.Entries, recorded.Entry{File: file, Step: step, Nodes: []string{hostlist.Compress(nodes)}})
}

// WriteManifest writes the manifest of s.Entries.
func (s *Site) WriteManifest(tb testing.TB) {
	tb.Helper()
	data, err := json.MarshalIndent(recorded.Manifest{Format: recorded.Format, Entries: s.Entries}, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, recorded.ManifestFile), append(data, '\n'), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// AllReduce writes the A3 Mega log as run on nodes, and lists it: new
// rank lines, the table scaled by the slowest node's factor.
func (s *Site) AllReduce(tb testing.TB, step, file string, nodes ...string) {
	tb.Helper()
	f := 1.0
	for _, n := range nodes {
		if v, ok := s.Slow[n]; ok {
			f = min(f, v)
		}
	}
	var b strings.Builder
	header := s.sample.header
	if s.Size > 0 {
		header = strings.Replace(header, "minBytes 8 ", "minBytes "+strconv.FormatInt(s.Size, 10)+" ", 1)
	}
	b.WriteString(header + "\n#\n# Using devices\n")
	for i, n := range nodes {
		for d := range GPUs {
			fmt.Fprintf(&b, "#  Rank %2d Group  0 Pid %6d on %s device %2d [0000:%02x:00] %s\n", i*GPUs+d, 6899+d, n, d, 4+d, s.sample.gpu)
		}
	}
	for _, l := range s.sample.table {
		if fs := strings.Fields(l); s.Size > 0 && len(fs) == 13 && fs[0] != strconv.FormatInt(s.Size, 10) && isDigits(fs[0]) {
			continue
		}
		b.WriteString(scaleRow(l, f) + "\n")
	}
	s.Add(tb, step, file, b.String(), nodes...)
}

func isDigits(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// scaleRow scales a table row's times by 1/f and its bandwidths by f;
// other lines, and every line at f = 1, are kept as printed.
func scaleRow(line string, f float64) string {
	fs := strings.Fields(line)
	if f == 1 || len(fs) != 13 || fs[0][0] < '0' || fs[0][0] > '9' {
		return line
	}
	num := func(i int, k float64) string {
		v, _ := strconv.ParseFloat(fs[i], 64)
		return strconv.FormatFloat(v*k, 'f', 2, 64)
	}
	return fmt.Sprintf("%12s  %12s  %8s  %6s  %6s  %8s  %6s  %6s  %6s  %8s  %6s  %6s  %6s",
		fs[0], fs[1], fs[2], fs[3], fs[4], num(5, 1/f), num(6, f), num(7, f), fs[8], num(9, 1/f), num(10, f), num(11, f), fs[12])
}

// SMI is the capture's GPU line once per GPU, with its index and a
// serial of the node's.
func (s *Site) SMI(node string) string {
	lines := []string{s.sample.smi[0]}
	for i := range GPUs {
		v := strings.Split(s.sample.smi[1], ", ")
		v[0], v[1] = strconv.Itoa(i), fmt.Sprintf("16509240%02d%03d", i, len(node)) // index, serial
		lines = append(lines, strings.Join(v, ", "))
	}
	return strings.Join(lines, "\n") + "\n"
}

// Diag is a passing dcgmi diag -r 3 -j of 8 GPUs in DCGM 4.x's
// documented shape (no capture is public).
func Diag(node string) string {
	var res, ents []string
	for i := range GPUs {
		res = append(res, fmt.Sprintf(`{"entity_group": "GPU", "entity_group_id": 1, "entity_id": %d, "status": "Pass"}`, i))
		ents = append(ents, fmt.Sprintf(`{"entity_id": %d, "serial_num": "16509240%02d%03d"}`, i, i, len(node)))
	}
	r := strings.Join(res, ", ")
	return `{
  "DCGM Diagnostic": {"test_categories": [
    {"category": "Deployment", "tests": [{"name": "software", "results": [` + r + `], "test_summary": {"status": "Pass"}}]},
    {"category": "Hardware", "tests": [{"name": "memory", "results": [` + r + `], "test_summary": {"status": "Pass"}},
                                       {"name": "diagnostic", "results": [` + r + `], "test_summary": {"status": "Pass"}}]}
  ]},
  "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": [` + strings.Join(ents, ", ") + `]}],
  "metadata": {"Driver Version Detected": "590.48.01", "version": "4.2.3"}
}
`
}

// Inventory is racks of perRack nodes (gpu-r0001-n01 …), modules of
// perModule racks (m01 …).
func Inventory(racks, perRack, perModule int) []burnin.Node {
	var out []burnin.Node
	for r := range racks {
		for n := range perRack {
			rack := fmt.Sprintf("r%04d", r+1)
			out = append(out, burnin.Node{Name: fmt.Sprintf("gpu-%s-n%02d", rack, n+1), Rack: rack,
				Module: fmt.Sprintf("m%02d", r/perModule+1), Serial: fmt.Sprintf("SN-%s-%02d", rack, n+1)})
		}
	}
	return out
}
