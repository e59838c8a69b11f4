package gputools

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// diagTest is one test of dcgmi diag: its 3.x name, its 4.x (plugin)
// name, its category, the lowest level (-r) that runs it, and whether
// it is one of the software checks (one result for all GPUs).
type diagTest struct {
	name, plugin, category string
	level                  int
	software               bool
}

// diagTests are DCGM's tests by level: 1 the software (deployment)
// checks, 2 adds PCIe and GPU memory, 3 the diagnostic and the
// targeted stress, power and memory bandwidth tests, 4 the pulse test
// and memtest.
var diagTests = []diagTest{
	{"Denylist", "software", "Deployment", 1, true},
	{"NVML Library", "software", "Deployment", 1, true},
	{"CUDA Main Library", "software", "Deployment", 1, true},
	{"Permissions and OS Blocks", "software", "Deployment", 1, true},
	{"Persistence Mode", "software", "Deployment", 1, true},
	{"Environment Variables", "software", "Deployment", 1, true},
	{"Page Retirement/Row Remap", "software", "Deployment", 1, true},
	{"Graphics Processes", "software", "Deployment", 1, true},
	{"Inforom", "software", "Deployment", 1, true},
	{"PCIe", "pcie", "Integration", 2, false},
	{"GPU Memory", "memory", "Hardware", 2, false},
	{"Diagnostic", "diagnostic", "Hardware", 3, false},
	{"Pulse Test", "pulse_test", "Hardware", 4, false},
	{"Memtest", "memtest", "Hardware", 4, false},
	{"Targeted Stress", "targeted_stress", "Performance", 3, false},
	{"Targeted Power", "targeted_power", "Performance", 3, false},
	{"Memory Bandwidth", "memory_bandwidth", "Performance", 3, false},
}

// DiagTestNames are the tests' 3.x names, which DiagFailure.Test takes.
func DiagTestNames() []string {
	out := make([]string, len(diagTests))
	for i, t := range diagTests {
		out[i] = t.name
	}
	return out
}

// KnownDiagTest reports whether name is a test's 3.x name.
func KnownDiagTest(name string) bool { return slices.Contains(DiagTestNames(), name) }

// DiagExitFail is dcgmi's exit code when a test fails (DCGM_ST_NVVS_ERROR,
// -30, as an exit status).
const DiagExitFail = 226

var categories = []string{"Deployment", "Integration", "Hardware", "Performance"}

// diagResult is one test's outcome per GPU.
type diagResult struct {
	test   diagTest
	failed map[int]failure // by GPU
}

// failure is a failed result's warning and DCGM error id.
type failure struct {
	warning string
	id      int
}

func runDiag(n *Node, level int, ids []int) []diagResult {
	var out []diagResult
	for _, t := range diagTests {
		if t.level > level {
			continue
		}
		r := diagResult{test: t, failed: map[int]failure{}}
		for _, f := range n.Failures {
			if f.Test == t.name && (ids == nil || containsInt(ids, f.GPU)) {
				r.failed[f.GPU] = failure{f.Warning, errorID(t)}
			}
		}
		out = append(out, r)
	}
	return out
}

func gpuIDs(n *Node, ids []int) []int {
	var out []int
	for _, g := range n.GPUs {
		if ids == nil || containsInt(ids, g.Index) {
			out = append(out, g.Index)
		}
	}
	return out
}

func failedAny(rs []diagResult) bool {
	for _, r := range rs {
		if len(r.failed) > 0 {
			return true
		}
	}
	return false
}

// Diag writes `dcgmi diag -r level -j` for n's GPUs in ids (nil: all)
// in the shape of the node's DCGM version (3.x: "DCGM GPU Diagnostic"
// with gpu_ids per result; 4.x: "DCGM Diagnostic" with entity results,
// test summaries, entity_groups and metadata), and returns the exit
// code: 0, or DiagExitFail when a test failed.
func Diag(w io.Writer, n *Node, level int, ids []int, jsonOut bool) int {
	rs := runDiag(n, level, ids)
	gpus := gpuIDs(n, ids)
	var doc any
	switch {
	case !jsonOut:
		diagTable(w, n, rs, gpus)
	case strings.HasPrefix(n.DCGM, "3."):
		doc = diag3(n, rs, gpus)
	default:
		doc = diag4(n, rs, gpus)
	}
	if doc != nil {
		b, _ := json.MarshalIndent(doc, "", "    ")
		fmt.Fprintf(w, "%s\n", b)
	}
	if failedAny(rs) {
		return DiagExitFail
	}
	return 0
}

// ordered is a JSON object that keeps its keys' order, as dcgmi prints
// them.
type ordered []kv

type kv struct {
	k string
	v any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// diag3 is DCGM 3.x's document: categories of tests, each with results
// naming their GPUs in gpu_ids (a software check: one result for all
// GPUs, unless one fails).
func diag3(n *Node, rs []diagResult, gpus []int) any {
	var cats []any
	for _, c := range categories {
		var tests []any
		for _, r := range rs {
			if r.test.category != c {
				continue
			}
			tests = append(tests, ordered{{"name", r.test.name}, {"results", results3(r, gpus)}})
		}
		if len(tests) > 0 {
			cats = append(cats, ordered{{"category", c}, {"tests", tests}})
		}
	}
	return ordered{{"DCGM GPU Diagnostic", ordered{{"test_categories", cats}, {"version", n.DCGM}}},
		{"Driver Version Detected", n.Driver}}
}

func results3(r diagResult, gpus []int) []any {
	var out []any
	var passed []int
	for _, g := range gpus {
		if f, bad := r.failed[g]; bad {
			out = append(out, ordered{{"gpu_ids", strconv.Itoa(g)}, {"status", "Fail"},
				{"warnings", []any{ordered{{"warning", f.warning}, {"error_id", f.id}}}}})
		} else {
			passed = append(passed, g)
		}
	}
	if r.test.software || len(passed) == 0 {
		if len(passed) > 0 {
			out = append([]any{ordered{{"gpu_ids", joinInts(passed)}, {"status", "Pass"}}}, out...)
		}
		return out
	}
	var pass []any
	for _, g := range passed {
		pass = append(pass, ordered{{"gpu_ids", strconv.Itoa(g)}, {"status", "Pass"}})
	}
	return append(pass, out...)
}

// errorID is a DCGM error id for a failing test's warning (the
// dcgmError_t codes are DCGM's; these are representative).
func errorID(t diagTest) int {
	switch t.name {
	case "Page Retirement/Row Remap":
		return 82 // DCGM_FR_PENDING_ROW_REMAP
	case "Targeted Power", "Diagnostic":
		return 25 // DCGM_FR_THERMAL_VIOLATIONS_TS
	case "GPU Memory", "Memtest":
		return 38 // DCGM_FR_FAULTY_MEMORY
	}
	return 1 // DCGM_FR_INTERNAL
}

// diag4 is DCGM 4.x's document: one test per plugin (the software
// checks are one test, "software"), each with a summary and one result
// per GPU entity, then the entity groups and the metadata.
func diag4(n *Node, rs []diagResult, gpus []int) any {
	var cats []any
	for _, c := range categories {
		var tests []any
		seen := map[string]int{}
		var merged []diagResult
		for _, r := range rs {
			if r.test.category != c {
				continue
			}
			if i, ok := seen[r.test.plugin]; ok {
				for g, warn := range r.failed {
					merged[i].failed[g] = warn
				}
				continue
			}
			seen[r.test.plugin] = len(merged)
			m := diagResult{test: r.test, failed: map[int]failure{}}
			for g, warn := range r.failed {
				m.failed[g] = warn
			}
			merged = append(merged, m)
		}
		for _, r := range merged {
			status := "Pass"
			if len(r.failed) > 0 {
				status = "Fail"
			}
			var results []any
			for _, g := range gpus {
				res := ordered{{"entity_group", "GPU"}, {"entity_group_id", 1}, {"entity_id", g}}
				if f, bad := r.failed[g]; bad {
					res = append(res, kv{"status", "Fail"}, kv{"warnings", []any{ordered{{"error_category", 3}, {"error_id", f.id},
						{"error_severity", 2}, {"warning", f.warning}}}})
				} else {
					res = append(res, kv{"status", "Pass"})
				}
				results = append(results, res)
			}
			tests = append(tests, ordered{{"name", r.test.plugin}, {"results", results}, {"test_summary", ordered{{"status", status}}}})
		}
		if len(tests) > 0 {
			cats = append(cats, ordered{{"category", c}, {"tests", tests}})
		}
	}
	var entities []any
	for _, g := range gpus {
		serial := "<<<NOT_SUPPORTED>>>"
		for _, x := range n.GPUs {
			if x.Index == g && x.Serial != "" {
				serial = x.Serial
			}
		}
		entities = append(entities, ordered{{"device_id", deviceID(n, g)}, {"entity_id", g}, {"serial_num", serial}})
	}
	return ordered{{"DCGM Diagnostic", ordered{{"test_categories", cats}}},
		{"entity_groups", []any{ordered{{"entities", entities}, {"entity_group", "GPU"}, {"entity_group_id", 1}}}},
		{"metadata", ordered{{"Driver Version Detected", n.Driver}, {"version", n.DCGM}}}}
}

// deviceID is a GPU's PCI device id as DCGM prints it (assumed for
// parts no public capture shows).
func deviceID(n *Node, gpu int) string {
	for _, g := range n.GPUs {
		if g.Index == gpu && strings.Contains(g.Name, "GB200") {
			return "2941"
		}
	}
	return "31c2"
}

// diagTable is dcgmi diag's table without -j.
func diagTable(w io.Writer, n *Node, rs []diagResult, gpus []int) {
	const left, right = 27, 48
	line := "+" + strings.Repeat("-", left) + "+" + strings.Repeat("-", right) + "+"
	row := func(a, b string) { fmt.Fprintf(w, "| %-*s| %-*s|\n", left-1, a, right-1, b) }
	section := func(name string) {
		l := "-----  " + name + "  "
		fmt.Fprintf(w, "|%s+%s|\n", l+strings.Repeat("-", max(left-len(l), 0)), strings.Repeat("-", right))
	}
	fmt.Fprintln(w, "Successfully ran diagnostic for group.")
	fmt.Fprintln(w, line)
	row("Diagnostic", "Result")
	fmt.Fprintln(w, "+"+strings.Repeat("=", left)+"+"+strings.Repeat("=", right)+"+")
	section("Metadata")
	row("DCGM Version", n.DCGM)
	row("Driver Version Detected", n.Driver)
	ids := make([]string, len(gpus))
	for i, g := range gpus {
		ids[i] = deviceID(n, g)
	}
	row("GPU Device IDs Detected", strings.Join(ids, ","))
	for _, c := range categories {
		started := false
		for _, r := range rs {
			if r.test.category != c {
				continue
			}
			if !started {
				section(c)
				started = true
			}
			if len(r.failed) == 0 {
				row(r.test.name, "Pass")
				continue
			}
			var passed, failed []int
			for _, g := range gpus {
				if _, bad := r.failed[g]; bad {
					failed = append(failed, g)
				} else {
					passed = append(passed, g)
				}
			}
			first := r.test.name
			if len(passed) > 0 {
				row(first, "Pass - GPUs: "+strings.ReplaceAll(joinInts(passed), ",", ", "))
				first = ""
			}
			for _, g := range failed {
				row(first, "Fail - GPU: "+strconv.Itoa(g))
				first = ""
				label := "Warning"
				for _, part := range wrap(r.failed[g].warning, right-2) {
					row(label, part)
					label = ""
				}
			}
		}
	}
	fmt.Fprintln(w, line)
}

func wrap(s string, width int) []string {
	var out []string
	for len(s) > width {
		cut := strings.LastIndexByte(s[:width], ' ')
		if cut <= 0 {
			cut = width
		}
		out = append(out, s[:cut])
		s = strings.TrimLeft(s[cut:], " ")
	}
	return append(out, s)
}
