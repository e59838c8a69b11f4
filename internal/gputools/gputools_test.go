package gputools

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const samples = "../../../shared/samples"

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/gputools -update to write %s", path)
	assert.Equal(t, string(want), string(got), "%s differs (go test ./internal/gputools -update rewrites it)", path)
}

// node is a GB300 compute tray as the simulated fleet reports it.
func node(name, domain string, load float64) *Node {
	n := &Node{Name: name, Key: "ma/r01/compute-01", Powered: true, Time: time.Date(2026, 7, 14, 8, 12, 38, 696e6, time.UTC),
		Driver: "580.65.06", CUDA: "13.0", DCGM: "4.2.3", Domain: domain, LinkFactor: 1, ChassisSerial: "SN-COMPUTE-0000001", Slot: 5, TrayIndex: 0}
	bus := []string{"00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"}
	for i := range 4 {
		serial := fmt.Sprintf("SN-GPU-%07d", i+1)
		n.GPUs = append(n.GPUs, GPU{Index: i, Name: "NVIDIA GB300", Serial: serial, UUID: GPUUUID(serial), PCIBusID: bus[i], ModuleID: i + 1,
			PowerW: 200 + 1200*load, LimitW: 1400, DefaultLimitW: 1400, MinLimitW: 200, MaxLimitW: 1400,
			TempC: 32 + 40*load, MemTempC: 34 + 38*load, SMClock: 1965, MaxSMClock: 1965, MemClock: 3996,
			Utilization: int(100 * load), MemUtilization: int(40 * load), MemTotalMiB: 284208, MemUsedMiB: int(200000 * load)})
	}
	return n
}

func env(nodes ...*Node) Env {
	by := map[string]*Node{}
	for _, n := range nodes {
		by[n.Name] = n
	}
	return Env{Node: nodes[0].Name, Nodes: func(names ...string) ([]*Node, error) {
		var out []*Node
		for _, name := range names {
			n := by[name]
			if n == nil {
				return nil, fmt.Errorf("no node %q", name)
			}
			out = append(out, n)
		}
		return out, nil
	}}
}

func run(t *testing.T, e Env, tool string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(tool, args, e, &out, &errOut)
	return out.String(), errOut.String(), code
}

// The query of operate.md section E, and the same fields without
// header or units, for a node at full load with a hot, throttled GPU.
func TestQueryGPU(t *testing.T) {
	n := node("gpu-a-r01-n01", "ma/r01/scale-up", 1)
	n.GPUs[2].TempC, n.GPUs[2].SMClock, n.GPUs[2].Throttle = 91, 1410, ThrottleSWThermal|ThrottleHWThermal
	n.GPUs[1].ECCUncorrected, n.GPUs[1].ECCUncorrectedTotal = 2, 2
	q := "--query-gpu=index,uuid,serial,name,pci.bus_id,power.draw,power.limit,enforced.power.limit,temperature.gpu,clocks.current.sm,clocks_throttle_reasons.active,ecc.errors.uncorrected.volatile.total"
	out, errOut, code := run(t, env(n), "nvidia-smi", q, "--format=csv")
	require.Equal(t, 0, code, errOut)
	golden(t, "smi-query.csv", []byte(out))
	out, _, code = run(t, env(n), "nvidia-smi", q, "--format=csv,noheader,nounits")
	require.Equal(t, 0, code)
	golden(t, "smi-query-noheader-nounits.csv", []byte(out))
	first := strings.SplitN(out, "\n", 2)[0]
	assert.Equal(t, "0, "+GPUUUID("SN-GPU-0000001")+", SN-GPU-0000001, NVIDIA GB300, 00000008:01:00.0, 1400.00, 1400.00, 1400.00, 72, 1965, 0x0000000000000000, 0", first)

	out, _, code = run(t, env(n), "nvidia-smi", "-L")
	require.Equal(t, 0, code)
	golden(t, "smi-L.txt", []byte(out))

	out, _, code = run(t, env(n), "nvidia-smi", "--query-gpu=index,power.draw,bogus.field", "--format=csv")
	assert.Equal(t, 2, code)
	assert.Equal(t, "Field \"bogus.field\" is not a valid field to query.\n\n", out)

	n.Powered = false
	out, _, code = run(t, env(n), "nvidia-smi", "-L")
	assert.Equal(t, 9, code)
	assert.Contains(t, out, "couldn't communicate with the NVIDIA driver")
}

// sampleQuery reads the idle --query-gpu section of a capture of driver
// 590 (samples/nvidia-smi): each field's header (with its unit) and
// value.
func sampleQuery(t *testing.T) map[string][2]string {
	t.Helper()
	path := filepath.Join(samples, "nvidia-smi", "nvidia_gpu_exporter-captures__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the nvidia-smi samples are read in place from %s: %v", samples, err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "# idle :: query-gpu") {
			header, values := strings.Split(lines[i+3], ", "), strings.Split(lines[i+4], ", ")
			require.Equal(t, len(header), len(values))
			out := map[string][2]string{}
			for j, h := range header {
				name, _, _ := strings.Cut(h, " [")
				out[name] = [2]string{h, values[j]}
			}
			return out
		}
	}
	t.Fatal("no idle query-gpu section in the capture")
	return nil
}

// shape classifies a value as the test compares it: its unit and form,
// not its number.
func shape(v string) string {
	for _, c := range []struct{ re, name string }{
		{`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}$`, "timestamp"},
		{`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, "gpu-uuid"},
		{`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, "uuid"},
		{`^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d$`, "pci"},
		{`^0x[0-9A-F]{16}$`, "mask"},
		{`^\d+\.\d\d W$`, "watts"},
		{`^\d+ MHz$`, "mhz"},
		{`^\d+ MiB$`, "mib"},
		{`^\d+ %$`, "percent"},
		{`^\d+$`, "integer"},
		{`^(Active|Not Active)$`, "active"},
		{`^(Enabled|Disabled)$`, "enabled"},
		{`^(Yes|No)$`, "yes-no"},
	} {
		if regexp.MustCompile(c.re).MatchString(v) {
			return c.name
		}
	}
	return "text"
}

// Every field the simulated nvidia-smi answers has, where driver 590's
// capture reports it, the same header (with its unit) and the same
// form of value.
func TestQueryGPUShapesAgainstTheCapture(t *testing.T) {
	sample := sampleQuery(t)
	n := node("gpu-a-r01-n01", "ma/r01/scale-up", 0.5)
	compared := 0
	for _, f := range SMIFields() {
		s, ok := sample[f]
		if !ok {
			continue
		}
		var out bytes.Buffer
		require.NoError(t, QueryGPU(&out, n, []string{f}, []int{0}, true, true))
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		require.Len(t, lines, 2)
		assert.Equal(t, s[0], lines[0], "%s: the header", f)
		if strings.Contains(s[1], "N/A") || strings.HasPrefix(s[1], "[") || s[1] == "" || lines[1] == naValue {
			continue
		}
		// serials are the inventory's, not NVML's 13 digits
		if sh := shape(s[1]); sh != "text" && f != "serial" {
			assert.Equal(t, sh, shape(lines[1]), "%s: the capture prints %q, the simulation %q", f, s[1], lines[1])
		}
		compared++
	}
	assert.Greater(t, compared, 40, "most answered fields are in the capture")
}

// dcgmi diag -r 3 -j in both shapes: a healthy node, and one whose GPU
// 1 fails the targeted power test with a thermal violation and GPU 3
// has a pending row remap. The exit code is 226 on a failure.
func TestDiag(t *testing.T) {
	for _, version := range []string{"3.3.9", "4.2.3"} {
		n := node("gpu-a-r01-n01", "ma/r01/scale-up", 0)
		n.DCGM = version
		major := version[:1]
		out, _, code := run(t, env(n), "dcgmi", "diag", "-r", "3", "-j")
		require.Equal(t, 0, code)
		golden(t, "dcgm"+major+"-r3.json", []byte(out))
		checkDiagShape(t, out, major)

		n.Failures = []DiagFailure{{Test: "Targeted Power", GPU: 1, Warning: "Thermal violations totaling 18.4 seconds started at 3.1 seconds into the test for GPU 1"},
			{Test: "Page Retirement/Row Remap", GPU: 3, Warning: "GPU 3 had uncorrectable memory errors and row remapping is pending. Run nvidia-smi -r to reset the GPU."}}
		out, _, code = run(t, env(n), "dcgmi", "diag", "-r", "3", "-j")
		require.Equal(t, DiagExitFail, code)
		golden(t, "dcgm"+major+"-r3-fail.json", []byte(out))
		checkDiagShape(t, out, major)
		assert.Contains(t, out, `"Fail"`)

		// level 1 runs only the software checks: the thermal failure is not seen
		out, _, code = run(t, env(n), "dcgmi", "diag", "-r", "1", "-j")
		require.Equal(t, DiagExitFail, code, "the pending remap fails the software checks")
		assert.NotContains(t, out, "Thermal")
	}
	n := node("gpu-a-r01-n01", "ma/r01/scale-up", 0)
	n.Failures = []DiagFailure{{Test: "GPU Memory", GPU: 2, Warning: "GPU 2 failed the memory test: 2 uncorrectable errors in the pattern writes"}}
	out, _, code := run(t, env(n), "dcgmi", "diag", "-r", "2")
	assert.Equal(t, DiagExitFail, code)
	golden(t, "dcgm-table.txt", []byte(out))
}

// checkDiagShape checks a dcgmi diag -j document against the shapes
// operate.md section E describes (no public capture exists).
func checkDiagShape(t *testing.T, doc, major string) {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(doc), &v))
	top := map[string]string{"3": "DCGM GPU Diagnostic", "4": "DCGM Diagnostic"}[major]
	d, ok := v[top].(map[string]any)
	require.True(t, ok, "top key %q", top)
	cats := d["test_categories"].([]any)
	require.NotEmpty(t, cats)
	for _, c := range cats {
		cm := c.(map[string]any)
		assert.Contains(t, []string{"Deployment", "Hardware", "Integration", "Performance", "Custom"}, cm["category"])
		for _, test := range cm["tests"].([]any) {
			tm := test.(map[string]any)
			assert.NotEmpty(t, tm["name"])
			results := tm["results"].([]any)
			require.NotEmpty(t, results, "a test with no results would read as a pass")
			for _, r := range results {
				rm := r.(map[string]any)
				assert.Contains(t, []string{"Pass", "Fail"}, rm["status"])
				if major == "3" {
					assert.Regexp(t, `^\d+(,\d+)*$`, rm["gpu_ids"])
				} else {
					assert.Equal(t, "GPU", rm["entity_group"])
					assert.EqualValues(t, 1, rm["entity_group_id"])
					assert.Contains(t, rm, "entity_id")
				}
			}
			if major == "4" {
				assert.Contains(t, []string{"Pass", "Fail"}, tm["test_summary"].(map[string]any)["status"])
			}
		}
	}
	if major == "3" {
		assert.Equal(t, "3.3.9", d["version"])
		return
	}
	groups := v["entity_groups"].([]any)
	require.Len(t, groups, 1)
	for _, e := range groups[0].(map[string]any)["entities"].([]any) {
		em := e.(map[string]any)
		assert.Contains(t, em, "device_id")
		assert.Contains(t, em, "serial_num")
	}
	md := v["metadata"].(map[string]any)
	assert.Equal(t, "580.65.06", md["Driver Version Detected"])
	assert.Equal(t, "4.2.3", md["version"])
}

// ncclRows reads the table rows of an all_reduce_perf output: the
// columns' end positions and the values.
type ncclRow struct {
	ends   []int
	fields []string
}

func ncclTable(out string) (rows []ncclRow, header []string, avg float64) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "#       size") || strings.HasPrefix(l, "#        (B)") || strings.HasPrefix(l, "#                 "):
			header = append(header, l)
		case strings.HasPrefix(l, "# Avg bus bandwidth"):
			avg, _ = strconv.ParseFloat(strings.TrimSpace(strings.SplitN(l, ":", 2)[1]), 64)
		case regexp.MustCompile(`^\s+\d`).MatchString(l):
			var r ncclRow
			for _, m := range regexp.MustCompile(`\S+`).FindAllStringIndex(l, -1) {
				r.ends = append(r.ends, m[1])
				r.fields = append(r.fields, l[m[0]:m[1]])
			}
			rows = append(rows, r)
		}
	}
	return rows, header, avg
}

// all_reduce_perf on one node, on a rack of 18 (one NVLink domain), on
// the rack with one slow scale-up link, and across two racks: the table
// has the samples' columns, header and footer; its bus bandwidth at
// 8 GB is GB200 NVL72's in one domain, falls with a slow link, and
// falls to the scale-out network's across domains.
func TestAllReducePerf(t *testing.T) {
	sample, err := os.ReadFile(filepath.Join(samples, "nccl-tests", "create-a3mega-ztan-fork__h100-80gb-hbm3__a3mega-2node-16rank__all_reduce__8B-8G.txt"))
	if err != nil {
		t.Fatalf("the nccl-tests samples are read in place from %s: %v", samples, err)
	}
	sRows, sHeader, sAvg := ncclTable(string(sample))
	require.Len(t, sRows, 31)

	rack := func(n int, domain func(i int) string) []*Node {
		var out []*Node
		for i := range n {
			out = append(out, node(fmt.Sprintf("gpu-a-r01-n%02d", i+1), domain(i), 1))
		}
		return out
	}
	one := func(int) string { return "ma/r01/scale-up" }
	bus8G := func(out string) float64 {
		rows, _, _ := ncclTable(out)
		last := rows[len(rows)-1]
		require.Equal(t, "8589934592", last.fields[0])
		v, _ := strconv.ParseFloat(last.fields[7], 64)
		return v
	}
	args := []string{"-b", "8", "-e", "8G", "-f", "2", "-g", "4"}
	cases := []struct {
		name  string
		nodes []*Node
	}{
		{"1node", rack(1, one)},
		{"rack", rack(18, one)},
		{"2racks", rack(36, func(i int) string { return fmt.Sprintf("m/r%02d", i/18) })},
	}
	got := map[string]float64{}
	for _, c := range cases {
		e := env(c.nodes...)
		for _, n := range c.nodes {
			e.JobNodes = append(e.JobNodes, n.Name)
		}
		out, errOut, code := run(t, e, "all_reduce_perf", args...)
		require.Equal(t, 0, code, errOut)
		golden(t, "nccl-"+c.name+".txt", []byte(out))
		rows, header, avg := ncclTable(out)
		require.Len(t, rows, 31)
		assert.Equal(t, sHeader, header, "the column headers are nccl-tests'")
		sum := 0.0
		for i, r := range rows {
			assert.Equal(t, sRows[i].ends, r.ends, "row %d: the columns end where nccl-tests' do", i)
			assert.Equal(t, sRows[i].fields[0], r.fields[0], "row %d: the sizes", i)
			for _, col := range []int{7, 11} {
				v, _ := strconv.ParseFloat(r.fields[col], 64)
				sum += v
			}
		}
		assert.InDelta(t, sum/62, avg, 0.01, "the average is over every row, both places")
		got[c.name] = bus8G(out)
		assert.Equal(t, strings.Count(out, "#  Rank"), 4*len(c.nodes))
	}
	assert.InDelta(t, sumRows(sRows)/62, sAvg, 0.01, "the sample's average is computed the same way")
	assert.InDelta(t, 840, got["rack"], 15, "one NVL72 domain at 8 GB")
	assert.InDelta(t, 381, got["2racks"], 20, "two domains: the scale-out network (the 20-rack sample: 381 GB/s at 8 GB)")

	slow := rack(18, one)
	slow[6].LinkFactor = 0.5
	e := env(slow...)
	for _, n := range slow {
		e.JobNodes = append(e.JobNodes, n.Name)
	}
	out, _, code := run(t, e, "all_reduce_perf", args...)
	require.Equal(t, 0, code)
	assert.InDelta(t, got["rack"]/2, bus8G(out), 15, "a slow scale-up link halves the rack's bandwidth")

	e.Rank = 3
	out, _, code = run(t, e, "all_reduce_perf", args...)
	assert.Equal(t, 0, code)
	assert.Empty(t, out, "only rank 0 prints")
}

func sumRows(rows []ncclRow) float64 {
	s := 0.0
	for _, r := range rows {
		for _, col := range []int{7, 11} {
			v, _ := strconv.ParseFloat(r.fields[col], 64)
			s += v
		}
	}
	return s
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"8": 8, "1K": 1024, "32M": 32 << 20, "8G": 8 << 30, "8g": 8 << 30} {
		got, err := ParseSize(in)
		require.NoError(t, err)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseSize("x")
	assert.Error(t, err)
}
