package satcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/burnin/recorded/recordedtest"
	"github.com/seamdc/seam/internal/cli"
)

// recordedSamples is ../shared/samples, read in place.
const recordedSamples = "../../../shared/samples"

// h100Contracts is a copy of the example whose compute trays list H100
// GPUs, the recorded samples' GPUs.
func h100Contracts(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "h100")
	require.NoError(t, os.CopyFS(dir, os.DirFS(exampleDir)))
	p := filepath.Join(dir, "racks.cue")
	text, err := os.ReadFile(p)
	require.NoError(t, err)
	want := `gpu: {kind: "gpu", count: 4, model: "B300"}`
	require.Contains(t, string(text), want)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(text), want, `gpu: {kind: "gpu", count: 4, model: "H100"}`, 1)), 0o644))
	return dir
}

// importedStore is a SQLite lifecycle store of the example, initialised
// and imported with the real commands (nothing commissioned: the gate's
// holds are what is checked); ops may do everything. It returns the
// store and ops' key.
func importedStore(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	ops, opsPub := sshKey(t)
	pub, err := os.ReadFile(opsPub)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "allowed_signers"), []byte(`ops namespaces="seam-lifecycle" `+string(pub)), 0o644))
	access := `{"format": "seam.lifecycle.access/v1", "allowed_signers_file": "allowed_signers",
  "roles": {"admin": {"may": ["access", "release-any-hold", "asbuilt", "holds"], "transitions": []}},
  "members": {"ssh:ops": {"roles": ["admin"]}}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "access.json"), []byte(access), 0o644))
	store := filepath.Join(dir, "site.db")
	for _, args := range [][]string{
		{"lifecycle", "init", exampleDir, "--access", filepath.Join(dir, "access.json"), "--key", ops, "--store", store},
		{"lifecycle", "import", filepath.Join(exampleDir, "inventory/racks.json"), "--key", ops, "--store", store},
	} {
		code, stdout, stderr := sat(t, args...)
		require.Equal(t, 0, code, "sat %s:\n%s%s", strings.Join(args, " "), stdout, stderr)
	}
	return store, ops
}

// sat burnin grade, the real command, on outputs recorded for eight
// nodes of module ma (racks a-r01 and a-r02 of the example, its trays'
// GPUs listed as the samples' H100s) built from the real samples, one
// node's all-reduce slowed: exactly that node is held, in the lifecycle
// store too (exit 2); the bundle verifies; the report and baselines are
// written. A dry run writes nothing, and against the example's own
// inventory (B300) holds every node on the GPU model; --drain
// without a Slurm fails before grading. A truncated file is exit 1
// naming the file and its line, and nothing is written.
func TestBurninGradeCommand(t *testing.T) {
	var nodes []burnin.Node
	for _, rack := range []string{"a-r01", "a-r02"} {
		for _, n := range []string{"n01", "n02", "n03", "n04"} {
			nodes = append(nodes, burnin.Node{Name: "gpu-" + rack + "-" + n, Rack: rack, Module: "ma"})
		}
	}
	slow := "gpu-a-r01-n02"
	dir := t.TempDir()
	recordedtest.Write(t, recordedSamples, filepath.Join(dir, "recorded"), nodes, recordedtest.Options{Slow: map[string]float64{slow: 0.6}})
	store, ops := importedStore(t)
	key, trust := sshKey(t)
	h100 := h100Contracts(t)
	grade := func(out string, extra ...string) (int, string, string) {
		t.Helper()
		args := append([]string{"burnin", "grade", filepath.Join(dir, "recorded"), "--contracts", h100, "--module", "ma", "--out", out, "--gpus", "8",
			"--sign-key", key, "--lifecycle", store, "--lifecycle-key", ops}, extra...)
		return sat(t, args...)
	}

	ev := filepath.Join(dir, "ev")
	code, stdout, stderr := grade(ev)
	require.Equal(t, cli.ExitFindings, code, "a node held back is exit 2:\n%s%s", stdout, stderr)
	assert.Contains(t, stdout, "8 nodes graded, 7 passed, 1 held back, 0 to re-test")
	assert.Contains(t, stdout, "held "+slow+" (serial SN-COMPUTE-0000002):\n  "+slow+": single busbw_gbps 202.4 GB/s at 8 ranks")
	assert.Regexp(t, `ledger: `+slow+` held: burn-in failed \(evidence \w+\)`, stdout)
	assert.Equal(t, 1, strings.Count(stdout, "held: burn-in failed"), stdout)
	code, show, _ := sat(t, "lifecycle", "show", slow, "--store", store)
	require.Equal(t, 0, code)
	assert.Contains(t, show, "burnin:seam-burnin-ma")
	code, show, _ = sat(t, "lifecycle", "show", "gpu-a-r01-n01", "--store", store)
	require.Equal(t, 0, code)
	assert.NotContains(t, show, "burnin:seam-burnin-ma")
	code, out, errOut := sat(t, "verify", ev, "--trust", trust)
	assert.Equal(t, cli.ExitOK, code, out+errOut)
	for _, f := range []string{"burnin.csv", "burnin.junit.xml", "burnin.html"} {
		assert.FileExists(t, filepath.Join(ev+".report", f))
	}
	var res burnin.Result
	raw, err := os.ReadFile(filepath.Join(ev, burnin.ResultFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &res))
	assert.Len(t, res.Nodes, 8)
	assert.FileExists(t, filepath.Join(ev+".baselines", slow+".json"))

	// a dry run grades and writes nothing; against the example's own
	// inventory (B300 trays) the samples' H100s are each node's finding
	dry := filepath.Join(dir, "dry")
	code, stdout, stderr = grade(dry, "--dry-run", "--contracts", exampleDir)
	require.Equal(t, cli.ExitFindings, code, stdout+stderr)
	assert.Contains(t, stdout, "dry run: nothing was written")
	assert.Contains(t, stdout, "8 nodes graded, 0 passed, 8 held back")
	assert.Contains(t, stdout, "node gpu-a-r01-n01: nvidia-smi (nodes/gpu-a-r01-n01/nvidia-smi.csv) reads GPU model NVIDIA H100 80GB HBM3, but the inventory has B300 for its tray (serial SN-COMPUTE-0000001)")
	assert.NoDirExists(t, dry)
	assert.NoDirExists(t, dry+".baselines")

	// --drain with no Slurm to drain through: exit 1 before grading
	code, _, stderr = grade(filepath.Join(dir, "nodrain"), "--drain", "--slurm-conf", filepath.Join(dir, "no-slurm.conf"))
	assert.Equal(t, cli.ExitTool, code)
	assert.Contains(t, stderr, "--drain: no slurmctld reachable")
	assert.NotContains(t, stderr, "grading the burn-in")

	// a truncated table: exit 1, naming the file and its line
	smi := filepath.Join(dir, "recorded", "nodes", "gpu-a-r02-n03", "nvidia-smi.csv")
	text, err := os.ReadFile(smi)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(smi, text[:len(text)-40], 0o644))
	bad := filepath.Join(dir, "bad")
	code, stdout, stderr = grade(bad)
	assert.Equal(t, cli.ExitTool, code, stdout+stderr)
	assert.Regexp(t, `sat burnin grade: the recorded burn-in does not read \(1 bad input\(s\)\); nothing was graded:\n.*`+filepath.Base(smi)+`:9: \d+ values for 11 fields`, stderr)
	assert.Contains(t, stderr, smi+":9:")
	assert.NoDirExists(t, bad)
}
