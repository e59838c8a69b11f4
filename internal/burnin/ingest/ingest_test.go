package ingest

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	ncclDir = "../../../../shared/samples/nccl-tests"
	smiDir  = "../../../../shared/samples/nvidia-smi"
)

func readNCCL(t *testing.T, name string) *NCCLRun {
	t.Helper()
	f, err := os.Open(filepath.Join(ncclDir, name))
	require.NoError(t, err, "the samples are read in place from ../shared/samples")
	defer f.Close()
	r, err := ParseNCCL(name, f)
	require.NoError(t, err)
	return r
}

// Every nccl-tests sample, read in place, with each surprise its
// PROVENANCE.md lists: noise lines before the header, a header without
// its "# ", rank lines elided or without a GPU name, a bare NCCL
// version line, no Avg line, tails starting at the last rank line,
// #wrong with an extra space, integer times past 10 ms.
func TestNCCLSamples(t *testing.T) {
	const G8 = 8589934592
	for _, tc := range []struct {
		file               string
		ranks, rows, noise int
		header             bool
		first, last        int64
		busbw8G            float64 // min of out-of-place, in-place
		avg                float64
		hasAvg, concluded  bool
		hosts              int
		gpu                string
	}{
		{"oci-hpc-oke__a100-sxm4-40gb__2node-16rank__all_reduce__8B-8G.txt", 16, 31, 3, true, 8, G8, 237.52, 66.4834, true, false, 2, "NVIDIA A100-SXM4-40GB"},
		{"oci-hpc-oke__a100-sxm4-40gb__2node-16rank__all_reduce__1G-8G__nccl-tests-2.17.9.txt", 4, 4, 6, true, 1 << 30, G8, 189.50, 0, false, true, 2, "NVIDIA A100-SXM4-40GB"},
		{"oci-hpc-oke__mi300x__rccl-tests__2node-16rank__all_reduce.txt", 4, 5, 4, true, 1 << 30, 16 << 30, 356.87, 0, false, true, 2, ""},
		{"coreweave__h100__64rank-sharp__all_reduce__truncated.txt", 0, 5, 1, true, 512 << 20, G8, 385.56, 373.187, true, false, 0, ""},
		{"coreweave__gb200-nvl72__1rack-72rank__all_reduce__tail.txt", 1, 5, 0, false, 512 << 20, G8, 834.57, 745.53, true, false, 1, "NVIDIA Graphics Device"},
		{"coreweave__gb200-nvl72__2rack-144rank__all_reduce__tail.txt", 1, 6, 0, false, 512 << 20, 16 << 30, 791.88, 688.487, true, false, 1, "NVIDIA Graphics Device"},
		{"coreweave__gb200-nvl72__20rack-1440rank__all_reduce__tail.txt", 1, 6, 0, false, 512 << 20, 16 << 30, 381.48, 297.808, true, false, 1, "NVIDIA GB200"},
		{"create-a3mega-ztan-fork__h100-80gb-hbm3__a3mega-2node-16rank__all_reduce__8B-8G.txt", 16, 31, 1, true, 8, G8, 337.35, 70.742, true, false, 2, "NVIDIA H100 80GB HBM3"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r := readNCCL(t, tc.file)
			assert.Len(t, r.Ranks, tc.ranks)
			assert.Len(t, r.Rows, tc.rows)
			assert.Equal(t, tc.noise, r.Noise, "noise lines")
			assert.Equal(t, tc.header, r.Header != nil)
			assert.Equal(t, tc.first, r.Rows[0].Size)
			assert.Equal(t, tc.last, r.Rows[len(r.Rows)-1].Size)
			assert.Equal(t, tc.hasAvg, r.HasAvg)
			assert.Equal(t, tc.avg, r.AvgBusBW)
			assert.Equal(t, tc.concluded, r.Concluded)
			assert.Len(t, r.Hosts(), tc.hosts)
			assert.Equal(t, 0, r.OutOfBounds)
			if tc.ranks > 0 {
				assert.Equal(t, tc.gpu, r.Ranks[0].GPU)
			}
			bw, err := r.BusBW(G8)
			require.NoError(t, err)
			assert.Equal(t, tc.busbw8G, bw)
			if r.HasAvg {
				assert.Less(t, r.AvgBusBW, bw, "the footer's average is over the sweep, below the large-size figure")
			}
			for _, row := range r.Rows {
				assert.Equal(t, "float", row.Type)
				assert.Equal(t, "sum", row.Redop)
				assert.Equal(t, -1, row.Root)
				assert.Equal(t, row.Size/4, row.Count)
				assert.Greater(t, row.OutPlace.TimeUS, 0.0)
			}
		})
	}
	r := readNCCL(t, "create-a3mega-ztan-fork__h100-80gb-hbm3__a3mega-2node-16rank__all_reduce__8B-8G.txt")
	require.NotNil(t, r.Header)
	assert.Equal(t, NCCLHeader{NThread: 1, NGPUs: 1, MinBytes: 8, MaxBytes: 8589934592, Warmup: 5, Iters: 20, Validation: 1, Line: 1}, *r.Header)
	last := r.Rows[len(r.Rows)-1]
	assert.Equal(t, NCCLMeasure{TimeUS: 47535, AlgBW: 180.71, BusBW: 338.82}, last.OutPlace, "an integer time past 10 ms")
	r = readNCCL(t, "oci-hpc-oke__a100-sxm4-40gb__2node-16rank__all_reduce__1G-8G__nccl-tests-2.17.9.txt")
	assert.Equal(t, "2.17.9", r.Version)
	assert.Equal(t, []int{0, 7, 8, 15}, []int{r.Ranks[0].Rank, r.Ranks[1].Rank, r.Ranks[2].Rank, r.Ranks[3].Rank}, "the author elided rank lines")
	r = readNCCL(t, "coreweave__h100__64rank-sharp__all_reduce__truncated.txt")
	assert.Equal(t, 50, r.Header.Iters)
	assert.Equal(t, 50, r.Header.Warmup)
	assert.Equal(t, 1, r.Header.Validation, "the old header ends at validation: 1 with a trailing space")
}

func sample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ncclDir, name))
	require.NoError(t, err)
	return string(b)
}

// Bad nccl-tests output is never a number: each is an error naming the
// file and, where there is one, the line.
func TestNCCLBadInput(t *testing.T) {
	good := sample(t, "coreweave__gb200-nvl72__1rack-72rank__all_reduce__tail.txt")
	lines := strings.Split(good, "\n")
	for _, tc := range []struct {
		name, text, want string
	}{
		{"truncated mid-row", strings.Join(lines[:9], "\n")[:len(strings.Join(lines[:9], "\n"))-20], "node.log:9: a table row of"},
		{"truncated before the footer", strings.Join(lines[:10], "\n"), "node.log:10: the log ends in the table"},
		{"interleaved", strings.Join(append(append(lines[:7:7], "srun: error: gpu-a-r01-n03: task 3: Exited with exit code 2"), lines[7:]...), "\n"), `node.log:8: "srun: error`},
		{"two runs", good + good, "a second table"},
		{"sizes out of order", strings.Join(append(append(lines[:6:6], lines[7], lines[6]), lines[8:]...), "\n"), "must grow"},
		{"empty", "", "no nccl-tests table rows"},
		{"only noise", "Warning: Permanently added\n", "no nccl-tests table rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNCCL("node.log", strings.NewReader(tc.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	wrong := strings.Replace(good, "834.57      0    20006", "834.57      3    20006", 1)
	r, err := ParseNCCL("node.log", strings.NewReader(wrong))
	require.NoError(t, err)
	_, err = r.BusBW(8589934592)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node.log:10: #wrong 3 out-of-place")
	_, err = r.BusBW(16 << 30)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no row of 17179869184 bytes")
	oob := strings.Replace(good, "# Out of bounds values : 0 OK", "# Out of bounds values : 108 FAILED", 1)
	r, err = ParseNCCL("node.log", strings.NewReader(oob))
	require.NoError(t, err)
	_, err = r.BusBW(1 << 30)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "108 out-of-bounds")
	na := strings.Replace(good, "846.82      0", "846.82    N/A", 1)
	r, err = ParseNCCL("node.log", strings.NewReader(na))
	require.NoError(t, err)
	_, err = r.BusBW(8589934592)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "validation was off")
}

// section is one raw section of an nvidia_gpu_exporter capture: the
// lines after the banner whose title contains title, to the next blank
// line.
func section(t *testing.T, file, title string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(smiDir, file))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var out bytes.Buffer
	state := 0 // 0 looking, 1 in the banner, 2 in the section
	for sc.Scan() {
		l := sc.Text()
		switch {
		case state == 0 && strings.HasPrefix(l, "# ") && strings.Contains(l, title):
			state = 1
		case state == 1 && strings.HasPrefix(l, "####"):
			state = 2
		case state == 2 && l == "":
			return out.String()
		case state == 2:
			out.WriteString(l + "\n")
		}
	}
	require.Equal(t, 2, state, "no section %q in %s", title, file)
	return out.String()
}

// The query-gpu CSV of every nvidia-smi capture (idle and under
// gpu-burn), read in place: header units stripped, "631.95 W" values,
// [N/A] and the other placeholders not numbers but not errors, hex
// masks.
func TestSMISamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(smiDir, "nvidia_gpu_exporter-captures__*.txt"))
	require.NoError(t, err)
	require.Len(t, files, 6)
	for _, path := range files {
		file := filepath.Base(path)
		for _, phase := range []string{"idle", "load"} {
			t.Run(file+"/"+phase, func(t *testing.T) {
				csv := section(t, file, phase+" :: query-gpu (csv")
				tab, err := ParseSMI(file, strings.NewReader(csv), nil)
				require.NoError(t, err)
				require.NotEmpty(t, tab.Rows)
				assert.Equal(t, "W", tab.Units["power.draw"])
				gs, err := tab.Telemetry()
				require.NoError(t, err)
				for _, g := range gs {
					assert.True(t, g.Has["power.draw"] || strings.Contains(file, "windows"), "power.draw read")
					assert.True(t, g.Has["temperature.gpu"])
					assert.Greater(t, g.TempC, 10.0)
					assert.Contains(t, g.Name, "NVIDIA")
					if phase == "load" && !strings.Contains(file, "mig") && !strings.Contains(file, "windows") {
						assert.Greater(t, g.PowerW, 100.0, "under gpu-burn")
					}
				}
				placeholders := 0
				for _, r := range tab.Rows {
					for _, v := range r.Values {
						if Unavailable(v) {
							placeholders++
						}
					}
				}
				assert.Greater(t, placeholders, 0, "every capture has [N/A] fields")
			})
		}
	}
}

func TestSMIBadInput(t *testing.T) {
	_, err := ParseSMI("smi.csv", strings.NewReader("index, power.draw [W]\n0, 100.00 W\n1\n"), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "smi.csv:3: 1 values for 2 fields")
	tab, err := ParseSMI("smi.csv", strings.NewReader("index, power.draw [W]\n0, lots W\n"), nil)
	require.NoError(t, err)
	_, err = tab.Telemetry()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `smi.csv:2: power.draw "lots W" is not a number`)
	_, err = ParseSMI("smi.csv", strings.NewReader("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"), []string{"index", "power.draw"})
	require.Error(t, err, "a driver failure is no GPU line")
	tab, err = ParseSMI("smi.csv", strings.NewReader("0, [N/A], 0x0000000000000060\n"), []string{"index", "power.draw", "clocks_event_reasons.active"})
	require.NoError(t, err)
	gs, err := tab.Telemetry()
	require.NoError(t, err)
	assert.False(t, gs[0].Has["power.draw"], "[N/A] is no reading, and not zero watts")
	assert.Equal(t, uint64(0x60), gs[0].Throttle)
}

func readDiag(t *testing.T, name string, exit int) (*Diag, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/dcgm", name))
	require.NoError(t, err)
	return ParseDiag(name, bytes.NewReader(b), exit)
}

// No real dcgmi diag -j capture is public (samples/nccl-tests'
// PROVENANCE.md, Gaps): these fixtures under testdata/dcgm are built by
// hand from the published format in ../shared/reference/operate.md
// section E (the 3.x shape of DCGM's JsonOutput.h with 3.1's nulls
// between tests and integer gpu_ids; the 4.x shape of a GB10 document
// quoted in facebookresearch/gcm PR #38), not captured from a GPU.
func TestDiagFixtures(t *testing.T) {
	d, err := readDiag(t, "dcgm3-pass.json", 0)
	require.NoError(t, err)
	assert.Equal(t, 3, d.Shape)
	assert.Equal(t, "3.1.0", d.Version)
	assert.Equal(t, "535.54.03", d.Driver)
	assert.Equal(t, 1, d.Noise, "the warning line before the JSON")
	assert.Len(t, d.Tests, 3, "the null between tests skipped")
	assert.Equal(t, []int{0, 1, 2, 3}, d.Tests[0].Results[0].GPUs)
	assert.Empty(t, d.Problems())
	d, err = readDiag(t, "dcgm3-pass.json", 226)
	require.NoError(t, err)
	assert.Contains(t, d.Problems()[0].String(), "dcgmi exited 226 although every result passed")

	d, err = readDiag(t, "dcgm3-fail.json", 226)
	require.NoError(t, err)
	ps := d.Problems()
	require.Len(t, ps, 1)
	assert.Equal(t, "GPU Memory: Fail on GPU 1: GPU 1 had uncorrectable memory errors", ps[0].String())

	d, err = readDiag(t, "dcgm4-fail.json", 226)
	require.NoError(t, err)
	assert.Equal(t, 4, d.Shape)
	assert.Equal(t, "4.2.3", d.Version)
	assert.Empty(t, d.Serials, "<<<NOT_SUPPORTED>>> is no serial")
	ps = d.Problems()
	require.Len(t, ps, 1)
	assert.Equal(t, []int{0}, ps[0].GPUs)
	assert.Contains(t, ps[0].String(), "diagnostic: Fail on GPU 0: Thermal violations")

	d, err = readDiag(t, "dcgm4-unknown-status.json", 0)
	require.NoError(t, err)
	ps = d.Problems()
	require.NotEmpty(t, ps)
	assert.Contains(t, ps[0].String(), `status "Incomplete"`)

	d, err = readDiag(t, "dcgm4-empty.json", 0)
	require.NoError(t, err)
	ps = d.Problems()
	require.Len(t, ps, 1)
	assert.Contains(t, ps[0].String(), "no test passed")

	for name, want := range map[string]string{
		"dcgm5-unknown-version.json": "DCGM version 5.0.1 in the 4.x shape: an unknown version",
		"dcgm-unknown-shape.json":    `no known dcgmi diag shape (top keys "DCGM Diagnostics v5"`,
		"dcgm4-truncated.json":       "dcgm4-truncated.json:4: the dcgmi JSON does not parse",
	} {
		_, err := readDiag(t, name, 0)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), want)
	}
	_, err = ParseDiag("n.out", strings.NewReader("{\"DCGM Diagnostic\": {\"test_categories\": [\n {\"category\": \"Hardware\", \"tests\": [{\"name\": \"memtest\", \"results\": [\n  {\"entity_id\": 0, \"status\": 5}]}]}]}}\n"), 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "n.out:3: the dcgmi JSON is not of dcgmi diag's shape", "a status that is no string, named by its line")
	_, err = ParseDiag("n.out", strings.NewReader(`{"dcgm diagnostic": {"test_categories": []}}`), 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no known dcgmi diag shape", "a shape's key as DCGM spells it")
	_, err = ParseDiag("n.out", strings.NewReader("Error: unable to establish a connection to the specified host: localhost\n"), 255)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no JSON document")
}

func FuzzParseNCCL(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(ncclDir, "*.txt"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseNCCL("fuzz", bytes.NewReader(b))
		if err != nil {
			return
		}
		if len(r.Rows) == 0 {
			t.Fatal("a run without rows parsed")
		}
		for _, row := range r.Rows {
			if bw, err := r.BusBW(row.Size); err == nil && bw < 0 {
				t.Fatalf("negative busbw %v", bw)
			}
		}
	})
}

func FuzzParseDiag(f *testing.F) {
	files, _ := filepath.Glob("testdata/dcgm/*.json")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b, 0)
		f.Add(b, 226)
	}
	f.Fuzz(func(t *testing.T, b []byte, exit int) {
		d, err := ParseDiag("fuzz", bytes.NewReader(b), exit)
		if err != nil {
			return
		}
		ps := d.Problems()
		if exit != 0 && len(ps) == 0 {
			t.Fatal("a non-zero exit passed")
		}
		if len(d.Tests) == 0 && len(ps) == 0 {
			t.Fatal("an empty diagnostic passed")
		}
	})
}

func FuzzParseSMI(f *testing.F) {
	f.Add([]byte("index, power.draw [W], clocks_event_reasons.active\n0, 100.00 W, 0x0000000000000001\n1, [N/A], [N/A]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := ParseSMI("fuzz", bytes.NewReader(b), nil)
		if err != nil {
			return
		}
		_, _ = tab.Telemetry()
	})
}
