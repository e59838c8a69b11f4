package satcmd

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/discover"
	"github.com/seamdc/seam/internal/firmware"
	"github.com/seamdc/seam/internal/inventory"
)

// exampleDiscovery writes what sat discover --format json reports of
// the example site when every BMC answers as the handover says, but for
// what change does to a tray (nil: drop it, as a BMC that does not
// answer): its findings are discover's own (Declare and Compare), from
// trays made out of the inventory instead of a walk of 1,680 BMCs.
func exampleDiscovery(t *testing.T, site string, change func(*discover.Tray) *discover.Tray) string {
	t.Helper()
	name, g, names, err := declared(exampleDir, nil, io.Discard)
	require.NoError(t, err)
	d := discover.Declare(g, names)
	var trays []*discover.Tray
	for _, k := range []inventory.Kind{inventory.KindCompute, inventory.KindScaleUpSwitch, inventory.KindPowerShelf} {
		for _, id := range g.OfKind(k) {
			e := g.El(id)
			tr := &discover.Tray{BMC: "bmc-" + strings.ReplaceAll(e.Key, "/", "-"), URI: "/redfish/v1/Chassis/" + strings.ReplaceAll(e.Key, "/", "-"),
				Kind: k.String(), Rack: g.El(g.Ancestor(id, inventory.KindRack)).Key, Slot: e.Slot, Serial: e.Identity.Serial,
				Model: e.Identity.Model, Firmware: maps.Clone(e.Identity.Firmware)}
			if change != nil {
				tr = change(tr)
			}
			if tr != nil {
				trays = append(trays, tr)
			}
		}
	}
	found := []*discover.Found{{BMC: "fleet", Trays: trays}}
	r := &discover.Report{Site: name, BMCs: 1, Answered: 1, Declared: d.Trays(), Found: len(trays), Findings: append([]discover.Finding{}, d.Compare(found, nil)...), Errors: []*discover.Error{}}
	if site != "" {
		r.Site = site
	}
	var b bytes.Buffer
	require.NoError(t, r.WriteJSON(&b))
	file := filepath.Join(t.TempDir(), "discovery.json")
	require.NoError(t, os.WriteFile(file, b.Bytes(), 0o644))
	return file
}

// drifted: ma/r01/compute-07 runs the baseline's bios already, and
// ma/r01/compute-18's BMC does not answer.
func drifted(tr *discover.Tray) *discover.Tray {
	switch {
	case strings.HasSuffix(tr.URI, "/ma-r01-compute-07"):
		tr.Firmware["bios"] = "1.5.0"
	case strings.HasSuffix(tr.URI, "/ma-r01-compute-18"):
		return nil
	}
	return tr
}

// sat firmware vet and plan on the example: the baseline vets clean;
// the plan of module ma is a canary rack and then one rack at a time
// (every module holds a slurmctld replica: a stage stays in one), with
// what the discovery found (a drifted bios, a tray unreached); its JSON
// reads back strictly as the plan, with the baseline's digest and, with
// --what-if, each stage's blast radius.
func TestFirmwarePlanCommand(t *testing.T) {
	code, stdout, stderr := sat(t, "firmware", "vet", "--contracts", exampleDir)
	require.Equal(t, 0, code, stdout+stderr)
	assert.Equal(t, "0 error(s), 0 warning(s)\n", stdout)

	disc := exampleDiscovery(t, "", drifted)
	code, stdout, stderr = sat(t, "firmware", "plan", "--contracts", exampleDir, "--discovery", disc, "--module", "ma")
	require.Equal(t, 0, code, stderr)
	for _, want := range []string{
		"firmware plan for site threemodule, module ma: rollout fw-",
		"policy: a canary stage of 1 rack(s) first; at most 1 rack(s) of a module in a stage; whole scale-up domains; one control-plane module at a time: ma (slurmctld), mb (slurmctld), mc (slurmctld)\n",
		"560 trays: 431 differ from their baseline (0 of them held by another owner), 128 up to date, 1 unreached, 0 without a baseline\n",
		"  ma/r01/compute-18: node gpu-a-r01-n18 (ma/r01/compute-18) at ma/r01 U31: no BMC reports it\n",
		"16 stage(s): 287 node(s) updated, 861 component update(s)\n",
		"stage 1 (canary): racks ma/r01 (modules ma; failure domains fd-a)\n",
		"  nodes out: 18: 17 updated, 1 stopped by the updates, 0 held already\n",
		"stage 16: racks ma/r16 (modules ma; failure domains fd-a)\n",
	} {
		assert.Contains(t, stdout, want)
	}
	assert.Regexp(t, `GB300 compute tray +bios +1\.4\.2 → 1\.5\.0 +286 tray\(s\)`, stdout)
	assert.Regexp(t, `(?m)^  hold firmware:fw-[0-9a-f]{8}-s01 on 18 node\(s\): gpu-a-r01-n\[01-18\]$`, stdout)
	assert.NotContains(t, stdout, "blast radius", "only with --what-if")

	out := filepath.Join(t.TempDir(), "plan.json")
	code, stdout, stderr = sat(t, "firmware", "plan", "--contracts", exampleDir, "--discovery", disc, "--format", "json", "--what-if", "-o", out, "--rollout", "spring")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout, "-o writes the plan to its file")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var p firmware.Plan
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&p))
	assert.Equal(t, firmware.Format, p.Format)
	set, _, err := firmware.Load(filepath.Join(exampleDir, "firmware"))
	require.NoError(t, err)
	assert.Equal(t, firmware.Input{Path: filepath.ToSlash(filepath.Join(exampleDir, "firmware")), Digest: set.Digest}, p.Baseline)
	assert.Equal(t, filepath.ToSlash(disc), p.Discovery.Path)
	assert.Equal(t, map[string][]string{"ma": {"slurmctld"}, "mb": {"slurmctld"}, "mc": {"slurmctld"}}, p.ControlPlanes)
	require.Len(t, p.Stages, 48, "the whole site, a module at a time")
	assert.Equal(t, "firmware:spring-s01", string(p.Stages[0].Holds[0].Owner))
	assert.Equal(t, "firmware:spring-s48", string(p.Stages[47].Holds[0].Owner))
	assert.Equal(t, []string{"mc/r16"}, p.Stages[47].Racks)
	require.NotNil(t, p.Stages[0].BlastRadius)
	assert.Len(t, p.Stages[0].BlastRadius.Nodes, 18)
	assert.Equal(t, []string{"ma/r01/scale-up"}, p.Stages[0].BlastRadius.Domains)

	code, stdout, stderr = sat(t, "firmware", "plan", "--contracts", exampleDir, "--discovery", disc, "--module", "mc", "--what-if")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "  blast radius: stops 18 node(s) (72 GPUs); racks mc/r01; scale-up domains mc/r01/scale-up\n")
}

// The holds already in the ledger, read from the lifecycle store (read
// only) or from sat lifecycle hold list --format json: a node another
// owner holds is skipped with its owner, not updated.
func TestFirmwarePlanCountsTheLedgersHolds(t *testing.T) {
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
	must := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := sat(t, args...)
		require.Equal(t, 0, code, "sat %s:\n%s%s", strings.Join(args, " "), stdout, stderr)
		return stdout
	}
	must("lifecycle", "init", exampleDir, "--store", store, "--access", filepath.Join(dir, "access.json"), "--key", ops)
	must("lifecycle", "import", filepath.Join(exampleDir, "inventory/racks.json"), "--store", store, "--key", ops)
	must("lifecycle", "hold", "set", "gpu-a-r01-n07", "--owner", "rma:CASE-7", "--reason", "GPU swap", "--store", store, "--key", ops)
	must("lifecycle", "hold", "set", "gpu-a-r02-n[01-02]", "--owner", "maintenance:CHG-1234", "--reason", "cold plates", "--store", store, "--key", ops)
	before, err := os.ReadFile(store)
	require.NoError(t, err)

	disc := exampleDiscovery(t, "", nil)
	code, stdout, stderr := sat(t, "firmware", "plan", "--contracts", exampleDir, "--discovery", disc, "--module", "ma", "--lifecycle", store)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "  nodes out: 18: 17 updated, 0 stopped by the updates, 1 held already\n  hold firmware:")
	assert.Contains(t, stdout, "  skipped, held by rma:CASE-7: gpu-a-r01-n07\n")
	assert.Contains(t, stdout, "  skipped, held by maintenance:CHG-1234: gpu-a-r02-n01\n  skipped, held by maintenance:CHG-1234: gpu-a-r02-n02\n")
	assert.Contains(t, stdout, "432 differ from their baseline (3 of them held by another owner)")
	after, err := os.ReadFile(store)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the store is read, never written")

	holds := filepath.Join(dir, "holds.json")
	require.NoError(t, os.WriteFile(holds, []byte(must("lifecycle", "hold", "list", "--store", store, "--format", "json")), 0o644))
	code, fromFile, stderr := sat(t, "firmware", "plan", "--contracts", exampleDir, "--discovery", disc, "--module", "ma", "--holds", holds)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, stdout, fromFile, "the store and its export give the same plan")
}

// Bad input is named: the baseline's file, line and column (vet: exit
// 2; plan: refused, exit 1), the discovery's file and line or its tray,
// a hold on a node the inventory does not have.
func TestFirmwareBadInput(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(exampleDir, "firmware", "baseline.cue"))
	require.NoError(t, err)
	broken := t.TempDir()
	noDigest := strings.Replace(string(src), `, sha256: "fa3b6dbca641661ec903564e3fd076a8bbc60227ae3d4a4bc905f385110e5086"`, "", 1)
	require.NoError(t, os.WriteFile(filepath.Join(broken, "baseline.cue"), []byte(noDigest), 0o644))
	line := 1 + strings.Count(noDigest[:strings.Index(noDigest, "bios: {")], "\n")
	want := filepath.ToSlash(filepath.Join(broken, "baseline.cue")) + ":" + strconv.Itoa(line) + ":4: error FW002: baselines.\"GB300 compute tray\".components.bios: component bios of GB300 compute tray has no image digest"

	code, stdout, _ := sat(t, "firmware", "vet", "--contracts", exampleDir, "--baseline", broken)
	assert.Equal(t, 2, code)
	assert.Contains(t, stdout, want)
	disc := exampleDiscovery(t, "", nil)
	code, _, stderr := sat(t, "firmware", "plan", "--contracts", exampleDir, "--baseline", broken, "--discovery", disc)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, want)
	assert.Contains(t, stderr, "sat firmware plan: the firmware baseline in "+broken+" has 1 error(s)\n")

	syntax := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(syntax, "baseline.cue"), []byte("package firmware\n\nbaselines: {\n\t\"x\": {order: [\"a\"\n}\n"), 0o644))
	code, stdout, _ = sat(t, "firmware", "vet", "--contracts", exampleDir, "--baseline", syntax)
	assert.Equal(t, 2, code)
	assert.Regexp(t, `baseline\.cue:[0-9]+:[0-9]+: error LOAD002: `, stdout)

	plan := func(disc string, more ...string) (int, string) {
		code, _, stderr := sat(t, append([]string{"firmware", "plan", "--contracts", exampleDir, "--discovery", disc}, more...)...)
		return code, stderr
	}
	code, stderr = plan(exampleDiscovery(t, "elsewhere", nil))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "discovery.json: a discovery of site elsewhere, not threemodule\n")

	truncated := filepath.Join(t.TempDir(), "cut.json")
	b, err := os.ReadFile(disc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(truncated, b[:200], 0o644))
	code, stderr = plan(truncated)
	assert.Equal(t, 1, code)
	assert.Regexp(t, `cut\.json:[0-9]+:[0-9]+: not a discovery \(sat discover --format json\): unexpected EOF`, stderr)

	require.Contains(t, string(b), `"findings": []`)
	other := filepath.Join(t.TempDir(), "other.json")
	require.NoError(t, os.WriteFile(other, []byte(strings.Replace(string(b), `"findings": []`, `"findings": [{"kind": "firmware-drift", "element": "ma/r17/compute-01", "field": "bmc", "found": "1", "message": "m"}]`, 1)), 0o644))
	code, stderr = plan(other)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "other.json: tray ma/r17/compute-01: no compute tray, scale-up switch tray or power shelf of threemodule has that key")

	holds := filepath.Join(t.TempDir(), "holds.json")
	require.NoError(t, os.WriteFile(holds, []byte(`[{"node": "gpu-z-r01-n01", "owner": "rma:CASE-1", "kind": "rma", "reason": "x", "since": "2027-01-01T00:00:00Z", "by": "ssh:ops"}]`), 0o644))
	code, stderr = plan(disc, "--holds", holds)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, holds+": hold rma:CASE-1 on gpu-z-r01-n01: no node of the inventory has that key or name")

	code, stderr = plan(disc, "--holds", holds, "--lifecycle", "site.db")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "give the holds as --holds FILE or --lifecycle STORE, not both")
	code, _, stderr = sat(t, "firmware", "plan", "--contracts", exampleDir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--discovery is required")
	code, _, stderr = sat(t, "firmware", "vet", "--contracts", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "/firmware is not a directory (the contracts' firmware/, or --baseline DIR)")
}
