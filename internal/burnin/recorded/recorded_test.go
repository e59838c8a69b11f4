package recorded_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/burnin/recorded"
	"github.com/seamdc/seam/internal/burnin/recorded/recordedtest"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/lifecycle"
)

// samples is ../shared/samples, read in place.
const samples = "../../../../shared/samples"

var cfg = burnin.Config{GPUs: recordedtest.GPUs}

func grade(t *testing.T, dir string, nodes []burnin.Node) *burnin.Result {
	t.Helper()
	res, err := recorded.Grade(context.Background(), dir, nodes, cfg)
	require.NoError(t, err)
	return res
}

func names(ns []*burnin.NodeResult) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

// Two racks of four H100 nodes from the real samples, one node's
// all-reduce slowed to 60 %: its own run, its two ring pairs and its
// rack. Grading holds exactly that node — on its own run, its best pair
// and the rack's bisection, whose halves the recorded pairs and single
// runs answer — and passes the seven others. A truncated file is then
// an error naming it and its line, and nothing is graded.
func TestGradeHoldsTheSlowNodeAndNamesTheTruncatedFile(t *testing.T) {
	nodes := recordedtest.Inventory(2, 4, 16)
	slow := nodes[1].Name
	dir := t.TempDir()
	recordedtest.Write(t, samples, dir, nodes, recordedtest.Options{Slow: map[string]float64{slow: 0.6}})

	res := grade(t, dir, nodes)
	assert.Equal(t, []string{slow}, names(res.Held()), "held:\n%s", reasons(res))
	assert.Empty(t, res.Retests())
	n := res.Node(slow)
	var scopes []string
	for _, f := range n.Flags {
		scopes = append(scopes, f.Scope+"/"+f.Measure)
	}
	assert.ElementsMatch(t, []string{"single/busbw_gbps", "pair/busbw_gbps", "rack/busbw_gbps"}, scopes, "%s", reasons(res))
	assert.Contains(t, strings.Join(n.Reasons(), "\n"), "bisected from rack r0001")
	assert.InDelta(t, 0.6*337.35, n.Measures[burnin.MeasureBusBW], 0.5, "the sample's 8 GiB figure, slowed")
	assert.Equal(t, "NVIDIA H100 80GB HBM3", n.SKU, "the capture's GPU name")
	for _, other := range nodes {
		if other.Name != slow {
			assert.True(t, res.Node(other.Name).Passed, "%s: %v", other.Name, res.Node(other.Name).Reasons())
		}
	}
	var raw []string
	for _, f := range res.Files {
		raw = append(raw, f.Name)
	}
	assert.Contains(t, raw, "recorded/manifest.json", "the site's manifest is kept with the outputs")
	assert.Contains(t, raw, "groups/bisect-r0001[a].txt", "the rack's half, answered by the recorded pair")

	// truncate a healthy node's single-node log in the middle of a row
	file := filepath.Join(dir, "nodes", nodes[5].Name, "all_reduce_perf.txt")
	lines := strings.Split(readFile(t, file), "\n")
	cut := strings.Join(lines[:40], "\n")
	require.NoError(t, os.WriteFile(file, []byte(cut[:len(cut)-30]), 0o644))
	_, err := recorded.Grade(context.Background(), dir, nodes, cfg)
	var bad *recorded.BadInput
	require.ErrorAs(t, err, &bad)
	assert.Len(t, bad.Errs, 1)
	assert.Contains(t, err.Error(), file+":40: a table row of")
	assert.Contains(t, err.Error(), "nothing was graded")
}

// Racks of six: a rack's halves are three nodes, which no recorded run
// covers. The slow node is held on its own evidence; the rack's other
// members are implicated, re-test needed, with the rack and their
// pairs, and not held; the gate holds only the slow node. A recorded
// run of one half (step bisect) clears that half's nodes.
func TestGradeImplicatesWhatItCannotRetest(t *testing.T) {
	nodes := recordedtest.Inventory(2, 6, 16)
	slow := nodes[1].Name
	dir := t.TempDir()
	site := recordedtest.Write(t, samples, dir, nodes, recordedtest.Options{Slow: map[string]float64{slow: 0.6}})

	res := grade(t, dir, nodes)
	assert.Equal(t, []string{slow}, names(res.Held()))
	want := []string{nodes[0].Name, nodes[2].Name, nodes[3].Name, nodes[4].Name, nodes[5].Name}
	assert.Equal(t, want, names(res.Retests()), "%s", reasons(res))
	assert.False(t, res.Passed())
	r := res.Node(nodes[3].Name)
	assert.Equal(t, burnin.VerdictRetest, r.Verdict())
	require.Len(t, r.Retest, 1)
	assert.Regexp(t, `^node gpu-r0001-n04: implicated, re-test needed: rack r0001 was low \(busbw 202\.4 GB/s, threshold 333\.0\); no recorded all-reduce of its part r0001\[b\] \(gpu-r0001-n04…gpu-r0001-n06 \(3 nodes\)\) narrows it to a node; its pairs: gpu-r0001-n03\+gpu-r0001-n04 337\.4 GB/s, gpu-r0001-n04\+gpu-r0001-n05 337\.4 GB/s$`, r.Retest[0])
	for _, n := range nodes[6:] {
		assert.True(t, res.Node(n.Name).Passed, n.Name)
	}
	var html strings.Builder
	require.NoError(t, burnin.WriteHTML(&html, res))
	assert.Contains(t, html.String(), "12 nodes, 1 held back, 5 to re-test")
	assert.Contains(t, html.String(), "re-test: node gpu-r0001-n04: implicated")

	// the gate holds the slow node only; the implicated are neither
	// held nor provisioned
	l := &ledger.Ledger{Backend: hold.NewMemory(&hold.Book{}, nil, nil)}
	// a firmware rollout's nodes wait for this burn-in, one of them under
	// RMA's swap hold too
	rollout := hold.Owner("burnin:fw-spring")
	_, err := l.Place(context.Background(), hold.Hold{Owner: rollout, Nodes: []string{slow, nodes[3].Name, nodes[6].Name, nodes[7].Name}, By: "ops"})
	require.NoError(t, err)
	_, err = l.Place(context.Background(), hold.Hold{Owner: hold.Swap, Nodes: []string{nodes[7].Name}, By: "lifecycle"})
	require.NoError(t, err)
	prov := &provisioner{}
	files := map[string]string{}
	for _, n := range nodes {
		files[n.Name] = n.Name + ".json"
	}
	acts := burnin.Gate(context.Background(), l, prov, lifecycle.Auth{}, "seam-burnin-m01", "ops", res, files, "B1")
	got := map[string]string{}
	for _, a := range acts {
		got[a.Node] = a.Action
	}
	assert.Equal(t, "held", got[slow])
	assert.Equal(t, "retest", got[nodes[3].Name])
	assert.Len(t, prov.files, 6, "the second rack's nodes are provisioned")
	h, err := l.Hold(context.Background(), burnin.Owner("seam-burnin-m01"))
	require.NoError(t, err)
	assert.Equal(t, []string{slow}, h.Nodes, "no hold on a guess")
	h, err = l.Hold(context.Background(), rollout)
	require.NoError(t, err)
	assert.Equal(t, []string{slow, nodes[3].Name}, h.Nodes, "a passing burn-in releases the rollout's hold; a failed or implicated node keeps it")
	h, err = l.Hold(context.Background(), hold.Swap)
	require.NoError(t, err)
	assert.Equal(t, []string{nodes[7].Name}, h.Nodes, "burnin:swap waits for the part's baseline")

	// the site recorded the half without the slow node: it was fine,
	// so only the other half's nodes stay implicated
	site.AllReduce(t, recorded.StepBisect, "bisect/r0001-b.txt", nodes[3].Name, nodes[4].Name, nodes[5].Name)
	site.WriteManifest(t)
	res = grade(t, dir, nodes)
	assert.Equal(t, []string{slow}, names(res.Held()))
	assert.Equal(t, []string{nodes[0].Name, nodes[2].Name}, names(res.Retests()), "%s", reasons(res))
}

// A node's own failure in a file that reads (a failed diagnostic, a
// tool that exited non-zero) is graded as burnin run grades it, a hold;
// it is not bad input.
func TestGradeHoldsFailuresTheToolsReported(t *testing.T) {
	nodes := recordedtest.Inventory(2, 4, 16)
	dir := t.TempDir()
	site := recordedtest.Write(t, samples, dir, nodes, recordedtest.Options{})
	diagFile := filepath.Join(dir, "nodes", nodes[2].Name, "dcgmi-diag.json")
	require.NoError(t, os.WriteFile(diagFile, []byte(strings.Replace(recordedtest.Diag(nodes[2].Name), `"entity_id": 3, "status": "Pass"}`, `"entity_id": 3, "status": "Fail", "warnings": [{"warning": "GPU 3 had uncorrectable memory errors"}]}`, 1)), 0o644))
	smiFile := filepath.Join(dir, "nodes", nodes[6].Name, "nvidia-smi.csv")
	require.NoError(t, os.WriteFile(smiFile, []byte("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"), 0o644))
	for i, e := range site.Entries {
		switch e.File {
		case "nodes/" + nodes[2].Name + "/dcgmi-diag.json":
			site.Entries[i].Exit = 226
		case "nodes/" + nodes[6].Name + "/nvidia-smi.csv":
			site.Entries[i].Exit = 9
		}
	}
	site.WriteManifest(t)
	res := grade(t, dir, nodes)
	assert.Equal(t, []string{nodes[2].Name, nodes[6].Name}, names(res.Held()), "%s", reasons(res))
	assert.Contains(t, strings.Join(res.Node(nodes[2].Name).Reasons(), "\n"), "GPU 3 had uncorrectable memory errors")
	assert.Contains(t, strings.Join(res.Node(nodes[6].Name).Reasons(), "\n"), "telemetry (nodes/"+nodes[6].Name+"/nvidia-smi.csv): exit 9")
}

// Every bad input is an error naming its file, and its line where there
// is one; none is a pass.
func TestGradeBadInput(t *testing.T) {
	nodes := recordedtest.Inventory(2, 4, 16)
	n1, n2 := nodes[0].Name, nodes[1].Name
	single := "nodes/" + n1 + "/all_reduce_perf.txt"
	smi := "nodes/" + n1 + "/nvidia-smi.csv"
	dcgm := "nodes/" + n1 + "/dcgmi-diag.json"
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, s *recordedtest.Site)
		cfg    func(c *burnin.Config)
		want   string // a regexp; FILE is the file's path, MANIFEST the manifest's
	}{
		{"a truncated all-reduce table", func(t *testing.T, s *recordedtest.Site) {
			lines := strings.Split(readFile(t, filepath.Join(s.Dir, single)), "\n")
			writeFile(t, s, single, strings.Join(lines[:45], "\n"))
		}, nil, `FILE:45: the log ends in the table, with no footer`},
		{"garbage for an all-reduce", func(t *testing.T, s *recordedtest.Site) {
			writeFile(t, s, single, "\x00\x01 binary junk\n")
		}, nil, `FILE: no nccl-tests table rows`},
		{"a truncated nvidia-smi table", func(t *testing.T, s *recordedtest.Site) {
			text := readFile(t, filepath.Join(s.Dir, smi))
			writeFile(t, s, smi, text[:len(text)-40])
		}, nil, `FILE:9: \d+ values for 11 fields`},
		{"a truncated dcgmi JSON", func(t *testing.T, s *recordedtest.Site) {
			text := readFile(t, filepath.Join(s.Dir, dcgm))
			writeFile(t, s, dcgm, text[:len(text)/2])
		}, nil, `FILE:\d+: the dcgmi JSON does not parse`},
		{"garbage for a diagnostic", func(t *testing.T, s *recordedtest.Site) {
			writeFile(t, s, dcgm, "Error: unable to establish a connection to the specified host: localhost\n")
		}, nil, `FILE: no JSON document`},
		{"a node the inventory does not have", func(t *testing.T, s *recordedtest.Site) {
			s.Entries[0].Nodes = []string{"gpu-r9999-n01"}
			s.WriteManifest(t)
		}, nil, `MANIFEST:4: nodes/` + n1 + `/dcgmi-diag.json \(diag\): node gpu-r9999-n01 is not in the inventory \(module m01\)`},
		{"a missing file", func(t *testing.T, s *recordedtest.Site) {
			require.NoError(t, os.Remove(filepath.Join(s.Dir, smi)))
		}, nil, `MANIFEST:11: ` + smi + ` \(telemetry\): the manifest names FILE, which does not exist`},
		{"a manifest cut short", func(t *testing.T, s *recordedtest.Site) {
			text := readFile(t, filepath.Join(s.Dir, recorded.ManifestFile))
			writeFile(t, s, recorded.ManifestFile, text[:len(text)/2])
		}, nil, `MANIFEST:\d+: entry \d+: unexpected EOF`},
		{"a manifest with bad JSON", func(t *testing.T, s *recordedtest.Site) {
			text := readFile(t, filepath.Join(s.Dir, recorded.ManifestFile))
			writeFile(t, s, recorded.ManifestFile, strings.Replace(text, `"step": "telemetry",`, `"step": "telemetry",,`, 1))
		}, nil, `MANIFEST:13: entry 2: invalid character ','`},
		{"a manifest with a misspelt key", func(t *testing.T, s *recordedtest.Site) {
			text := readFile(t, filepath.Join(s.Dir, recorded.ManifestFile))
			writeFile(t, s, recorded.ManifestFile, strings.Replace(text, `"nodes"`, `"node"`, 1))
		}, nil, `MANIFEST:4: entry 1: json: unknown field "node"`},
		{"not a manifest", func(t *testing.T, s *recordedtest.Site) {
			writeFile(t, s, recorded.ManifestFile, `{"format": "seam.burnin.recorded/v0", "entries": []}`)
		}, nil, `MANIFEST: format "seam.burnin.recorded/v0", want "seam.burnin.recorded/v1"`},
		{"no manifest", func(t *testing.T, s *recordedtest.Site) {
			require.NoError(t, os.Remove(filepath.Join(s.Dir, recorded.ManifestFile)))
		}, nil, `the manifest: open MANIFEST: no such file`},
		{"a node without its telemetry", func(t *testing.T, s *recordedtest.Site) {
			s.Entries = append(s.Entries[:1], s.Entries[2:]...)
			s.WriteManifest(t)
		}, nil, `MANIFEST:4: nodes/` + n1 + `/dcgmi-diag.json \(diag\): node ` + n1 + ` has no recorded telemetry`},
		{"an output recorded twice", func(t *testing.T, s *recordedtest.Site) {
			s.Entries = append(s.Entries, s.Entries[1])
			s.WriteManifest(t)
		}, nil, `MANIFEST:\d+: ` + smi + ` \(telemetry\): recorded twice: ` + smi + ` \(line 11\)`},
		{"an all-reduce on other nodes than named", func(t *testing.T, s *recordedtest.Site) {
			s.Entries[2].Nodes = []string{n2}
			s.WriteManifest(t)
		}, nil, `FILE:4: rank 0 ran on ` + n1 + `, which the manifest does not name for this file \(` + n2 + `\)`},
		{"a kind that is not the step's", func(t *testing.T, s *recordedtest.Site) {
			s.Entries[1].Kind = recorded.KindNCCL
			s.WriteManifest(t)
		}, nil, `MANIFEST:11: ` + smi + ` \(telemetry\): kind "nccl", but step telemetry is smi output`},
		{"a file outside the directory", func(t *testing.T, s *recordedtest.Site) {
			s.Entries[1].File = "../" + smi
			s.WriteManifest(t)
		}, nil, `MANIFEST:11: \.\./` + smi + ` \(telemetry\): the file must be a relative path inside`},
		{"the size graded not in the table", nil, func(c *burnin.Config) { c.Size = 16 << 30 }, `FILE: no row of 17179869184 bytes, the size graded`},
		{"the GPUs per node wrong", nil, func(c *burnin.Config) { c.GPUs = 4 }, `MANIFEST: 4 GPUs per node given, but no nvidia-smi table lists that many \(they list 8\)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := recordedtest.Write(t, samples, dir, nodes, recordedtest.Options{})
			if tc.change != nil {
				tc.change(t, s)
			}
			c := cfg
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			res, err := recorded.Grade(context.Background(), dir, nodes, c)
			require.Error(t, err, "bad input is never a pass")
			assert.Nil(t, res)
			file := map[string]string{"a truncated nvidia-smi table": smi, "a missing file": smi, "a truncated dcgmi JSON": dcgm, "garbage for a diagnostic": dcgm}[tc.name]
			if file == "" {
				file = single
			}
			want := strings.NewReplacer("FILE", regexp.QuoteMeta(filepath.Join(dir, file)), "MANIFEST", regexp.QuoteMeta(filepath.Join(dir, recorded.ManifestFile))).Replace(tc.want)
			assert.Regexp(t, want, err.Error())
		})
	}
}

// A manifest may name nodes by Slurm host lists; the groups are graded
// in inventory order whatever order they list.
func TestManifestHostLists(t *testing.T) {
	nodes := recordedtest.Inventory(2, 4, 16)
	dir := t.TempDir()
	s := recordedtest.Write(t, samples, dir, nodes, recordedtest.Options{})
	var rack *recorded.Entry
	for i, e := range s.Entries {
		if e.Step == recorded.StepRack {
			rack = &s.Entries[i]
			break
		}
	}
	require.NotNil(t, rack)
	assert.Equal(t, []string{"gpu-r0001-n[01-04]"}, rack.Nodes, "the site writes the rack as a host list")
	rack.Nodes = []string{"gpu-r0001-n04", "gpu-r0001-n[01-03]"}
	s.WriteManifest(t)
	c, err := cfg.WithDefaults()
	require.NoError(t, err)
	rec, err := recorded.Load(dir, nodes, c)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"gpu-r0001-n01", "gpu-r0001-n02", "gpu-r0001-n03", "gpu-r0001-n04"}, {"gpu-r0002-n01", "gpu-r0002-n02", "gpu-r0002-n03", "gpu-r0002-n04"}}, rec.Groups(burnin.ScopeRack))
	assert.True(t, rec.Has(burnin.Job{Step: "bisect", Nodes: []string{"gpu-r0001-n02", "gpu-r0001-n01"}}), "a half of two is their pair's run")
	assert.False(t, rec.Has(burnin.Job{Step: "bisect", Nodes: []string{"gpu-r0001-n01", "gpu-r0001-n03"}}))
	assert.Len(t, rec.Nodes(), 8)
}

func reasons(res *burnin.Result) string {
	var b strings.Builder
	for _, n := range res.Nodes {
		for _, r := range n.Reasons() {
			b.WriteString(r + "\n")
		}
	}
	return b.String()
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func writeFile(t *testing.T, s *recordedtest.Site, name, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, name), []byte(text), 0o644))
}

// provisioner records what the gate provisions.
type provisioner struct{ files []string }

func (p *provisioner) Provision(_ context.Context, _ lifecycle.Auth, file, _ string) (*lifecycle.Moved, error) {
	p.files = append(p.files, file)
	return &lifecycle.Moved{}, nil
}
