package lifecycle_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/discover"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/lifecycle"
)

// TestSuite runs every behaviour of the store on both engines: an
// embedded SQLite file and a real PostgreSQL (Debian's, started for the
// test, with TLS); then, on the same server, what only PostgreSQL has.
func TestSuite(t *testing.T) {
	prefetchBundles(t)
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			e.start(t)
			for _, c := range suite {
				t.Run(c.name, func(t *testing.T) { c.run(t, e) })
			}
			if e.name == lifecycle.Postgres {
				for _, c := range postgresOnly {
					t.Run(c.name, func(t *testing.T) { c.run(t, e) })
				}
			}
		})
	}
}

var suite = []struct {
	name string
	run  func(t *testing.T, e *engine)
}{
	// first what needs no SAT bundle, while the bundles are made
	{"roundtrip", testRoundTrip},
	{"asof", testAsOf},
	{"reconcile", testReconcile},
	{"access", testAccess},
	{"conflict", testConflict},
	{"clock", testClock},
	{"newer", testNewer},
	{"tamper", testTamper},
	{"policy edited", testPolicyEdited},
	{"reason edited", testReasonEdited},
	{"derived edited", testDerivedEdited},
	{"rollback", testRollback},
	{"time stamps", testTimeStamps},
	{"kill", testKill},
	{"commission", testCommission},
	{"issues", testIssues},
	{"provision", testProvision},
	{"rma", testRMA},
	{"holds", testHolds},
	{"ledger backend", testLedgerBackend},
	{"ledger migrates", testLedgerMigrates},
	{"ledger writers", testLedgerWriters},
	{"chemistry", testChemistry},
	{"chemistry migrates", testChemistryMigrates},
}

// The example's as-built goes in and comes back byte for byte in the
// per-rack form; its elements get its serials and names.
func testRoundTrip(t *testing.T, e *engine) {
	ctx := context.Background()
	s := stage(t, e, newClock(), "asbuilt") // design, then the import of handoverFile
	raw, err := os.ReadFile(handoverFile)
	require.NoError(t, err)
	out, err := s.Export(ctx, lifecycle.FormRacks)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(out))

	el, err := s.Show(ctx, "gpu-a-r01-n03", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, "ma/r01/compute-03", el.Key)
	assert.Equal(t, "SN-COMPUTE-0000003", el.Serial)
	assert.Equal(t, lifecycle.Design, el.State)

	again, err := s.Import(ctx, as(t, "integrator"), handoverFile, raw, "")
	require.NoError(t, err)
	assert.Zero(t, again.Changed, "the same as-built again changes nothing")

	_, err = s.Import(ctx, as(t, "odm"), handoverFile, raw, "")
	var ae *lifecycle.AccessError
	assert.True(t, errors.As(err, &ae), "a vendor may not import the as-built: %v", err)
}

// Module ma moves from installed to commissioned only on a signed SAT
// bundle of ma, by a trusted key, with every case passed; everything it
// contains moves with it, recorded with the bundle.
func testCommission(t *testing.T, e *engine) {
	ctx := context.Background()
	b := satBundles(t)
	s := installed(t, e, newClock())
	move := func(who, dir string) error {
		_, err := s.Transition(ctx, as(t, who), lifecycle.Move{Element: "ma", To: lifecycle.Commissioned, SAT: dir, Reason: "SAT"})
		return err
	}
	for _, c := range []struct {
		name, who, dir, want string
	}{
		{"no bundle", "cx", "", "module ma: no bundle of it is recorded in the issues log"},
		{"unsigned", "cx", b.unsigned, "not signed"},
		{"not a bundle", "cx", t.TempDir(), "sat verify --trust does not accept"},
	} {
		err := move(c.who, c.dir)
		var ee *lifecycle.EvidenceError
		require.True(t, errors.As(err, &ee), "%s: %v", c.name, err)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
	// a bundle edited after the run does not verify
	tampered := copyDir(t, b.passing)
	samples := filepath.Join(tampered, "samples.csv")
	raw := mustRead(t, samples)
	raw[len(raw)/2] ^= 0x01 // one bit of one sample
	require.NoError(t, os.WriteFile(samples, raw, 0o644))
	err := move("cx", tampered)
	var ee *lifecycle.EvidenceError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Contains(t, err.Error(), "sat verify --trust does not accept")
	// evidence of module ma does not commission a rack of mb
	_, err = s.Transition(ctx, as(t, "cx"), lifecycle.Move{Element: "mb/r01", To: lifecycle.Commissioned, SAT: b.passing, Reason: "SAT"})
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Contains(t, err.Error(), "module mb: no bundle of it is recorded")
	// a key the policy does not trust signed it: the admin trusts only
	// another key's evidence for a while
	untrusting := policy(t, nil)
	untrusting.EvidenceKeys = string(ssh.MarshalAuthorizedKey(team(t)["stranger"].pub))
	_, err = s.SetPolicy(ctx, as(t, "ops"), untrusting, "trust the stranger's rig only")
	require.NoError(t, err)
	err = move("cx", b.passing)
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Contains(t, err.Error(), "trusted")
	_, err = s.SetPolicy(ctx, as(t, "ops"), policy(t, nil), "trust rig again")
	require.NoError(t, err)
	var ae *lifecycle.AccessError
	require.True(t, errors.As(move("operator", b.passing), &ae), "an operator may not commission")

	el, err := s.Show(ctx, "ma", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, lifecycle.Installed, el.State, "nothing moved")
	rack, err := s.Show(ctx, "mb/r01", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, lifecycle.Installed, rack.State, "nothing moved")

	mv, err := s.Transition(ctx, as(t, "cx"), lifecycle.Move{Element: "ma", To: lifecycle.Commissioned, SAT: b.passing, Reason: "SAT of ma passed"})
	require.NoError(t, err)
	assert.Equal(t, "ssh:cx", mv.By)
	require.Len(t, mv.Evidence, 1)
	assert.Equal(t, lifecycle.NeedSAT, mv.Evidence[0].Kind)
	assert.Equal(t, "ma", mv.Evidence[0].Module)
	assert.Regexp(t, `^[0-9a-f]{64}$|^sha256:`, mv.Evidence[0].Digest)
	maCount, err := s.List(ctx, lifecycle.Filter{Under: "ma"})
	require.NoError(t, err)
	assert.Equal(t, len(maCount), mv.Count, "ma and everything in it moved")
	for _, el := range maCount {
		assert.Equal(t, lifecycle.Commissioned, el.State, el.Key)
	}
	node, err := s.Show(ctx, "gpu-a-r01-n03", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, lifecycle.Commissioned, node.State)
	assert.Equal(t, "ssh:cx", node.By)
	require.Len(t, node.Evidence, 1, "the node's event carries the bundle too")
	mb, err := s.Show(ctx, "mb", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, lifecycle.Design, mb.State, "another module does not move")

	// the same bundle cannot commission ma twice
	err = move("cx", b.passing)
	var na *lifecycle.NotAllowedError
	assert.True(t, errors.As(err, &na), "%v", err)
	checkOK(t, s)
}

// A node moves to provisioned only with its baseline: of its serial,
// passed, taken after its last swap; its parts move with it. A rack
// moves only when every node that moves has one.
func testProvision(t *testing.T, e *engine) {
	ctx := context.Background()
	clk := newClock()
	s := commissioned(t, e, clk)
	node := "ma/r01/compute-03"
	now := clk.Now()
	move := func(el string, files ...string) (*lifecycle.Moved, error) {
		return s.Transition(ctx, as(t, "cx"), lifecycle.Move{Element: el, To: lifecycle.Provisioned, Baselines: files, Reason: "burned in"})
	}
	for _, c := range []struct {
		name  string
		files []string
		want  string
	}{
		{"none", nil, "needs the burn-in baseline of each node that moves"},
		{"another serial", []string{baseline(t, node, "SN-COMPUTE-9999999", now, true)}, "was taken on serial SN-COMPUTE-9999999"},
		{"failed", []string{baseline(t, node, "SN-COMPUTE-0000003", now, false)}, "did not pass"},
		{"another node", []string{baseline(t, "gpu-a-r01-n04", "SN-COMPUTE-0000004", now, true)}, "does not move"},
		{"future", []string{baseline(t, node, "SN-COMPUTE-0000003", now.Add(time.Hour), true)}, "after now"},
		{"before import", []string{baseline(t, node, "SN-COMPUTE-0000003", now.Add(-24*time.Hour), true)}, "before its last swap"},
	} {
		_, err := move(node, c.files...)
		var ee *lifecycle.EvidenceError
		require.True(t, errors.As(err, &ee), "%s: %v", c.name, err)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
	_, err := s.Transition(ctx, as(t, "cx"), lifecycle.Move{Element: node, To: lifecycle.Provisioned, SAT: satBundles(t).passing, Reason: "x"})
	assert.ErrorContains(t, err, "needs no SAT bundle")

	good := baseline(t, "gpu-a-r01-n03", "SN-COMPUTE-0000003", now, true)
	mv, err := move(node, good)
	require.NoError(t, err)
	assert.Equal(t, 13, mv.Count, "the node and its 12 parts (4 GPUs, 2 CPUs, 4 NICs, a DPU, a BMC)")
	gpu, err := s.Show(ctx, node+"/gpu-2", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, lifecycle.Provisioned, gpu.State)
	require.Len(t, gpu.Evidence, 1)
	assert.Equal(t, node, gpu.Evidence[0].Node, "a part records its node's baseline")

	// the rack: its 17 other nodes need theirs
	_, err = move("ma/r01")
	assert.ErrorContains(t, err, "none for ma/r01/compute-01, ma/r01/compute-02, ma/r01/compute-04, ma/r01/compute-05, ma/r01/compute-06 and 12 more")
	var files []string
	for i := 1; i <= 18; i++ {
		if i == 3 {
			continue
		}
		files = append(files, baseline(t, fmt.Sprintf("gpu-a-r01-n%02d", i), fmt.Sprintf("SN-COMPUTE-%07d", i), now, true))
	}
	mv, err = move("ma/r01", files...)
	require.NoError(t, err)
	rack, err := s.List(ctx, lifecycle.Filter{Under: "ma/r01", State: lifecycle.Provisioned})
	require.NoError(t, err)
	all, err := s.List(ctx, lifecycle.Filter{Under: "ma/r01"})
	require.NoError(t, err)
	assert.Equal(t, len(all), len(rack), "the whole rack is provisioned")
	assert.Equal(t, len(all)-13, mv.Count, "all but the node provisioned before")
	checkOK(t, s)
}

// An RMA swaps the part in a slot: the slot lists both serials, the
// part sent back keeps its own history, and when it comes back
// repaired and is fitted in another rack its history follows it there.
// The as-built export shows the swap, and the contract is not touched.
func testRMA(t *testing.T, e *engine) {
	ctx := context.Background()
	clk := newClock()
	s := operating(t, e, clk)
	slot := "ma/r01/compute-03/gpu-2"
	gpu, err := s.Show(ctx, slot, time.Time{})
	require.NoError(t, err)
	old := gpu.Serial
	require.NotEmpty(t, old)

	_, err = s.Transition(ctx, as(t, "operator"), lifecycle.Move{Element: slot, To: lifecycle.RMA, Reason: "GPU fell off the bus"})
	assert.ErrorContains(t, err, "needs the serial of the replacement")
	_, err = s.Transition(ctx, as(t, "operator"), lifecycle.Move{Element: slot, To: lifecycle.RMA, Replacement: "SN-GPU-0000001", Reason: "x"})
	assert.ErrorContains(t, err, "is fitted at ma/r01/compute-01/gpu-1")

	_, err = s.Transition(ctx, as(t, "operator"), lifecycle.Move{Element: slot, To: lifecycle.RMA, Replacement: "SN-GPU-NEW-1", Reason: "GPU fell off the bus", Only: true})
	require.NoError(t, err)
	now, err := s.Show(ctx, slot, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, "SN-GPU-NEW-1", now.Serial)
	assert.Equal(t, lifecycle.RMA, now.State)
	holdsOn := func(node string) []string {
		hs, err := s.Holds(ctx, node)
		require.NoError(t, err)
		var out []string
		for _, h := range hs {
			out = append(out, string(h.Owner)+" by "+h.By)
		}
		return out
	}
	assert.Equal(t, []string{"rma:lifecycle by lifecycle"}, holdsOn("ma/r01/compute-03"), "a part under RMA holds its node")

	// the replacement burns in: commissioned, which holds the node for
	// burn-in, then provisioned on a baseline of its node taken after
	// the swap, which returns it
	mv, err := s.Transition(ctx, as(t, "cx"), lifecycle.Move{Element: slot, To: lifecycle.Commissioned, Reason: "replacement fitted"})
	require.NoError(t, err)
	assert.Equal(t, []string{"ma/r01/compute-03"}, mv.Nodes, "the move changed the node's holds")
	assert.Equal(t, []string{"burnin:swap by lifecycle"}, holdsOn("ma/r01/compute-03"), "a node with a swapped part is held for burn-in")
	_, err = s.Transition(ctx, as(t, "cx"), lifecycle.Move{Element: slot, To: lifecycle.Provisioned, Reason: "x",
		Baselines: []string{baseline(t, "gpu-a-r01-n03", "SN-COMPUTE-0000003", clk.t.Add(-time.Hour), true)}})
	assert.ErrorContains(t, err, "before its last swap")
	assert.Equal(t, []string{"burnin:swap by lifecycle"}, holdsOn("ma/r01/compute-03"), "no baseline after the swap: still held")
	err = s.ReleaseHold(ctx, as(t, "ops"), "ma/r01/compute-03", hold.Swap, "let it go")
	assert.ErrorContains(t, err, "follows its state", "nobody lets it go by hand")
	mv, err = s.Provision(ctx, as(t, "cx"), baseline(t, "gpu-a-r01-n03", "SN-COMPUTE-0000003", clk.Now(), true), "burned in again")
	require.NoError(t, err)
	assert.Equal(t, slot, mv.Element, "the node is in service: its swapped part moves")
	assert.Empty(t, holdsOn("ma/r01/compute-03"), "burned in after the swap: back in the pool")

	// the old GPU comes back repaired: it replaces a GPU of another rack
	other := "ma/r02/compute-01/gpu-1"
	was, err := s.Show(ctx, other, time.Time{})
	require.NoError(t, err)
	_, err = s.Transition(ctx, as(t, "operator"), lifecycle.Move{Element: other, To: lifecycle.RMA, Replacement: old, Reason: "fitted the repaired GPU"})
	require.NoError(t, err)

	// the slot's history lists both serials
	key, tenures, err := s.SlotHistory(ctx, slot)
	require.NoError(t, err)
	assert.Equal(t, slot, key)
	require.Len(t, tenures, 2)
	assert.Equal(t, old, tenures[0].Serial)
	assert.Equal(t, "GPU fell off the bus", tenures[0].Removed)
	assert.False(t, tenures[0].To.IsZero())
	assert.Equal(t, "SN-GPU-NEW-1", tenures[1].Serial)
	assert.True(t, tenures[1].To.IsZero(), "it is there still")

	// the old part's history follows it from rack r01 to rack r02
	hist, err := s.SerialHistory(ctx, old, time.Time{})
	require.NoError(t, err)
	var places []string
	for _, ev := range hist {
		if len(places) == 0 || places[len(places)-1] != ev.Element {
			places = append(places, ev.Element)
		}
	}
	assert.Equal(t, []string{slot, other}, places)
	first, last := hist[0], hist[len(hist)-1]
	assert.Equal(t, lifecycle.EvAsBuilt, first.Kind, "it came in with the handover")
	assert.Equal(t, other, last.Element)
	assert.Equal(t, old, last.Serial)
	assert.Equal(t, was.Serial, last.PrevSerial, "it replaced the GPU that was there")
	removed := hist[0]
	for _, ev := range hist {
		if ev.PrevSerial == old {
			removed = ev
		}
	}
	assert.Equal(t, slot, removed.Element)
	assert.Equal(t, lifecycle.RMA, removed.State)
	assert.Equal(t, "SN-GPU-NEW-1", removed.Serial)

	// the new part's history starts with its swap
	nh, err := s.SerialHistory(ctx, "SN-GPU-NEW-1", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, lifecycle.RMA, nh[0].State)
	assert.Equal(t, old, nh[0].PrevSerial)

	// a serial sent away is still found, where it was last
	el, err := s.Show(ctx, was.Serial, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, other, el.Key)

	// the as-built export has both swaps; imported again it changes nothing
	out, err := s.Export(ctx, lifecycle.FormRacks)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"gpu":["SN-GPU-0000009","SN-GPU-NEW-1","SN-GPU-0000011","SN-GPU-0000012"]`)
	assert.Contains(t, string(out), fmt.Sprintf(`"gpu":[%q,`, old))
	im, err := s.Import(ctx, as(t, "integrator"), "export.json", out, "")
	require.NoError(t, err)
	assert.Zero(t, im.Changed)
	checkOK(t, s)
}

// copyDir copies a bundle's files into a directory of the test's.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, e.IsDir(), "%s: a bundle of the test has no directories", e.Name())
		require.NoError(t, os.WriteFile(filepath.Join(out, e.Name()), mustRead(t, filepath.Join(dir, e.Name())), 0o644))
	}
	return out
}

func mustRead(t *testing.T, path string) []byte {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return raw
}

// checkOK checks the store is consistent.
func checkOK(t *testing.T, s *lifecycle.Store) {
	t.Helper()
	r, err := s.Check(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, r.Problems)
}

// The state of an element, and of the whole inventory, as of any time.
func testAsOf(t *testing.T, e *engine) {
	ctx := context.Background()
	clk := newClock()
	s, _ := newStore(t, e, clk, nil)
	t0 := clk.Now()
	clk.Set(time.Date(2026, 10, 15, 0, 0, 0, 0, time.UTC))
	_, err := s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma", To: lifecycle.Built, Reason: "built"})
	require.NoError(t, err)
	clk.Set(time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC))
	_, err = s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "mb/r01", To: lifecycle.Built, Reason: "built"})
	require.NoError(t, err)

	for _, c := range []struct {
		at   time.Time
		key  string
		want lifecycle.State
	}{
		{t0, "ma/r01/compute-03", lifecycle.Design},
		{time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), "ma/r01/compute-03", lifecycle.Built},
		{time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), "mb/r01", lifecycle.Design},
		{time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC), "mb/r01", lifecycle.Built},
	} {
		el, err := s.Show(ctx, c.key, c.at)
		require.NoError(t, err)
		assert.Equal(t, c.want, el.State, "%s at %s", c.key, c.at)
		st, _, _, err := s.StateAsOf(ctx, c.key, c.at)
		require.NoError(t, err)
		assert.Equal(t, c.want, st)
	}
	_, err = s.Show(ctx, "ma", time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC))
	assert.ErrorContains(t, err, "was not in the store at")

	count := func(at time.Time, state lifecycle.State) int {
		els, err := s.List(ctx, lifecycle.Filter{AsOf: at, State: state})
		require.NoError(t, err)
		return len(els)
	}
	all, err := s.AsOf(ctx, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	assert.Equal(t, 16095, len(all), "every element of the example")
	ma, err := s.List(ctx, lifecycle.Filter{Under: "ma"})
	require.NoError(t, err)
	rack, err := s.List(ctx, lifecycle.Filter{Under: "mb/r01"})
	require.NoError(t, err)
	assert.Equal(t, len(ma), count(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), lifecycle.Built))
	assert.Equal(t, len(ma)+len(rack), count(time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC), lifecycle.Built))
	assert.Zero(t, count(t0, lifecycle.Built))
	now, err := s.List(ctx, lifecycle.Filter{State: lifecycle.Built, Kind: "compute"})
	require.NoError(t, err)
	assert.Len(t, now, 16*18+18)

	_, hist, err := s.History(ctx, "ma/r01", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Len(t, hist, 2)
	assert.Equal(t, lifecycle.EvCreated, hist[0].Kind)
	assert.Equal(t, lifecycle.Built, hist[1].State)
	assert.Equal(t, "ssh:odm", hist[1].Actor)
	assert.NotZero(t, hist[1].Cause, "it moved with ma")
}

// Holds keep a node out of the pool, each an owner's (the ledger's
// vocabulary, kind:name) placed by someone: facilityd's are released
// only by facilityd (or a member who may release any hold);
// maintenance and rma holds follow the node's state; holds are history
// too.
func testHolds(t *testing.T, e *engine) {
	ctx := context.Background()
	clk := newClock()
	s := operating(t, e, clk)
	node := "gpu-a-r01-n03"
	facility := hold.Owner("facility:cooling_redundancy_lost:cooling_loop=l1")
	require.NoError(t, s.SetHold(ctx, as(t, "facilityd"), node, facility, "l1 lost redundancy (cdu-2 pump trip)"))
	hs, err := s.Holds(ctx, node)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, facility, hs[0].Owner)
	assert.Equal(t, "facility", hs[0].Kind)
	assert.Equal(t, "ssh:facilityd", hs[0].By)
	assert.Equal(t, "ma/r01/compute-03", hs[0].Node)
	require.NoError(t, s.SetHold(ctx, as(t, "facilityd"), node, facility, "the same alarm, after a restart"))
	again, err := s.Holds(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, hs, again, "placing a hold again keeps it as it was")
	require.NoError(t, s.SetHold(ctx, as(t, "operator"), node, "person:operator", "reseating a cable"))
	err = s.SetHold(ctx, as(t, "cx"), node, "person:cx", "x")
	var ae *lifecycle.AccessError
	assert.True(t, errors.As(err, &ae), "commissioning may not set holds here: %v", err)
	err = s.SetHold(ctx, as(t, "facilityd"), "ma/r01", "person:facilityd", "x")
	assert.ErrorContains(t, err, "not a node")

	err = s.ReleaseHold(ctx, as(t, "operator"), node, facility, "I think it is fine")
	assert.True(t, errors.As(err, &ae), "an operator may not release facilityd's hold: %v", err)
	_, err = s.Transition(ctx, as(t, "operator"), lifecycle.Move{Element: node, To: lifecycle.Maintenance, Reason: "swap a NIC"})
	require.NoError(t, err)
	hs, err = s.Holds(ctx, node)
	require.NoError(t, err)
	owners := map[hold.Owner]string{}
	for _, h := range hs {
		owners[h.Owner] = h.By
	}
	assert.Equal(t, map[hold.Owner]string{facility: "ssh:facilityd", "maintenance:lifecycle": "lifecycle", "person:operator": "ssh:operator"}, owners)
	marked := clk.Now()
	err = s.ReleaseHold(ctx, as(t, "ops"), node, "maintenance:lifecycle", "")
	assert.ErrorContains(t, err, "follows its state", "not even an admin releases the state machine's hold")

	require.NoError(t, s.ReleaseHold(ctx, as(t, "facilityd"), node, facility, "alarm cleared"))
	require.NoError(t, s.ReleaseHold(ctx, as(t, "facilityd"), node, facility, "released twice is released"))
	require.NoError(t, s.ReleaseHold(ctx, as(t, "operator"), node, "person:operator", "done"))
	_, err = s.Transition(ctx, as(t, "operator"), lifecycle.Move{Element: node, To: lifecycle.Operating, Reason: "NIC swapped"})
	require.NoError(t, err)
	hs, err = s.Holds(ctx, node)
	require.NoError(t, err)
	assert.Empty(t, hs, "the node is back in the pool")

	then, err := s.Show(ctx, node, marked)
	require.NoError(t, err)
	assert.Len(t, then.Holds, 3, "the holds as they were")
	assert.Equal(t, lifecycle.Maintenance, then.State)
	all, err := s.Holds(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, all)
	checkOK(t, s)
}

// The store is the ledger of holds (a hold.Backend): a hold on several
// nodes is one signed statement, nodes go by their scheduler names, the
// ledger's records are kept, a stale epoch is refused, and a session
// rolled back leaves nothing.
func testLedgerBackend(t *testing.T, e *engine) {
	ctx := context.Background()
	s := operating(t, e, newClock())
	b := s.Ledger(as(t, "operator"), "slurm")
	nodes := []string{"gpu-a-r01-n01", "gpu-a-r01-n02", "gpu-a-r02-n01"}
	ss, err := b.Begin(ctx)
	require.NoError(t, err)
	added, err := ss.Place(ctx, hold.Hold{Owner: "maintenance:CHG-1", Nodes: nodes, Why: "reseat the busbar", By: "ssh:operator"})
	require.NoError(t, err)
	assert.Equal(t, nodes, added)
	require.NoError(t, ss.SetRecords(ctx, map[string]*hold.Record{"gpu-a-r01-n01": {Ours: true, Reason: "maintenance:CHG-1"}}))
	require.NoError(t, ss.Fence(ctx, 7, "facilityd-0"))
	require.NoError(t, ss.Commit())

	ss, err = b.Begin(ctx)
	require.NoError(t, err)
	h, err := ss.Hold(ctx, "maintenance:CHG-1")
	require.NoError(t, err)
	require.NotNil(t, h)
	assert.Equal(t, nodes, h.Nodes, "by their Slurm names")
	assert.Equal(t, "ssh:operator", h.By)
	on, err := ss.On(ctx, []string{"gpu-a-r01-n02", "gpu-a-r03-n01"})
	require.NoError(t, err)
	assert.Len(t, on["gpu-a-r01-n02"], 1)
	assert.Empty(t, on["gpu-a-r03-n01"])
	recs, err := ss.Records(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]*hold.Record{"gpu-a-r01-n01": {Ours: true, Reason: "maintenance:CHG-1"}}, recs)
	assert.ErrorIs(t, ss.Fence(ctx, 6, "facilityd-1"), hold.ErrFenced, "an older leader is refused")
	require.NoError(t, ss.Fence(ctx, 7, "facilityd-0"))
	_, err = ss.Place(ctx, hold.Hold{Owner: "person:operator", Nodes: []string{"gpu-a-r03-n01"}, Why: "rolled back", By: "ssh:operator"})
	require.NoError(t, err)
	ss.Rollback()
	hs, err := s.Holds(ctx, "gpu-a-r03-n01")
	require.NoError(t, err)
	assert.Empty(t, hs, "a session rolled back writes nothing")

	// one signed statement for the three nodes; the others follow it
	_, evs, err := s.History(ctx, "gpu-a-r02-n01", time.Time{})
	require.NoError(t, err)
	last := evs[len(evs)-1]
	assert.Equal(t, lifecycle.EvHoldSet, last.Kind)
	assert.NotZero(t, last.Cause, "the hold's event on the third node follows the first's")

	ss, err = b.Begin(ctx)
	require.NoError(t, err)
	_, err = ss.Place(ctx, hold.Hold{Owner: "person:x", Nodes: []string{"gpu-z-r99-n99"}, Why: "x", By: "x"})
	assert.ErrorContains(t, err, "no node named gpu-z-r99-n99")
	removed, err := ss.Release(ctx, "maintenance:CHG-1", nil, "ssh:operator", "done")
	require.NoError(t, err)
	assert.Equal(t, nodes, removed)
	require.NoError(t, ss.Commit())
	checkOK(t, s)
}

// What sat discover finds is history: an event per element with
// findings, and one for the run.
func testReconcile(t *testing.T, e *engine) {
	ctx := context.Background()
	clk := newClock()
	s := installed(t, e, clk)
	r := lifecycle.Reconcile{Source: "sat discover test", Checked: 864, Findings: []lifecycle.Finding{
		{Element: "gpu-a-r01-n03", Kind: lifecycle.FindSerial, Field: "serial", Declared: "SN-COMPUTE-0000003", Discovered: "SN-COMPUTE-7777777"},
		{Element: "ma/r01/compute-03", Kind: lifecycle.FindFirmware, Field: "firmware.bios", Declared: "1.4.2", Discovered: "1.4.3"},
		{Element: "ma/r02", Kind: lifecycle.FindUnexpected, Detail: "a BMC at 10.1.2.60 answers that the inventory does not have"},
	}}
	_, err := s.RecordReconcile(ctx, as(t, "operator"), r)
	var ae *lifecycle.AccessError
	assert.True(t, errors.As(err, &ae), "%v", err)
	_, err = s.RecordReconcile(ctx, as(t, "discover"), lifecycle.Reconcile{Findings: []lifecycle.Finding{{Element: "nowhere"}}, Source: "x"})
	assert.ErrorContains(t, err, `"nowhere" is not an element`)
	rec, err := s.RecordReconcile(ctx, as(t, "discover"), r)
	require.NoError(t, err)
	assert.Equal(t, 2, rec.Elements)
	_, hist, err := s.History(ctx, "gpu-a-r01-n03", time.Time{})
	require.NoError(t, err)
	last := hist[len(hist)-1]
	assert.Equal(t, lifecycle.EvReconcile, last.Kind)
	assert.Equal(t, rec.Seq, last.Cause)
	assert.Contains(t, string(last.Data), "SN-COMPUTE-7777777")
	el, err := s.Show(ctx, "gpu-a-r01-n03", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, "SN-COMPUTE-0000003", el.Serial, "a finding changes nothing of the as-built")

	// the file sat discover --event writes is read as it is
	rep := &discover.Report{Site: "threemodule", BMCs: 18, Answered: 17, Declared: 18, Findings: []discover.Finding{
		{Kind: discover.ChangedSerial, Element: "ma/r01/compute-03/gpu-2", Declared: "SN-GPU-0000010", Found: "SN-GPU-9999999", Message: "GPU 2 carries another serial"},
		{Kind: discover.ExtraTray, Element: "ma/r01 U40", Found: "SN-X-1", Message: "a tray where the design has none"},
		{Kind: discover.MissingTray, Element: "ma/r01/compute-18", Declared: "ma/r01 U38", Message: "no BMC reports it"},
	}, Errors: []*discover.Error{{BMC: "bmc-a-r01-n18", URL: "https://10.1.1.38", URI: "/redfish/v1", Msg: "connection refused"}}}
	raw, err := json.Marshal(rep.Event(clk.t, "sat discover test", "ma/r01"))
	require.NoError(t, err)
	ev, err := lifecycle.ParseReconcile(raw)
	require.NoError(t, err)
	rec, err = s.RecordReconcile(ctx, as(t, "discover"), *ev)
	require.NoError(t, err)
	assert.Equal(t, 3, rec.Elements, "gpu-2, the rack (where the extra tray is) and compute-18")
	_, hist, err = s.History(ctx, "ma/r01/compute-03/gpu-2", time.Time{})
	require.NoError(t, err)
	last = hist[len(hist)-1]
	assert.Equal(t, lifecycle.EvReconcile, last.Kind)
	assert.Contains(t, string(last.Data), `"discovered":"SN-GPU-9999999"`)
	_, hist, err = s.History(ctx, "threemodule", time.Time{})
	require.NoError(t, err)
	last = hist[len(hist)-1]
	assert.Equal(t, rec.Seq, last.Seq)
	assert.Contains(t, last.Reason, "17 of 18 BMC(s) answered, 1 error(s)")
	assert.Contains(t, string(last.Data), "connection refused")
	_, err = lifecycle.ParseReconcile([]byte(strings.Replace(string(raw), `"inventory.reconcile"`, `"inventory.other"`, 1)))
	assert.ErrorContains(t, err, `type "inventory.other"`)
	_, err = lifecycle.ParseReconcile([]byte(strings.Replace(string(raw), `"checked"`, `"chekced"`, 1)))
	assert.ErrorContains(t, err, `unknown field "chekced"`)
	other := *ev
	other.Site = "elsewhere"
	_, err = s.RecordReconcile(ctx, as(t, "discover"), other)
	assert.ErrorContains(t, err, `the reconcile report is of site "elsewhere"`)
	checkOK(t, s)
}

// Who may move what is the policy: by role, by module; an unknown key
// is nobody; the policy itself changes only by an admin, and is kept.
func testAccess(t *testing.T, e *engine) {
	ctx := context.Background()
	s, _ := newStore(t, e, newClock(), nil)
	var ae *lifecycle.AccessError
	for _, c := range []struct {
		who, el string
		to      lifecycle.State
		want    string
	}{
		{"integrator", "ma", lifecycle.Built, "none of the member's roles (integrator) allows it"},
		{"mbonly", "ma", lifecycle.Built, "module ma is outside the member's modules (mb)"},
		{"stranger", "ma", lifecycle.Built, "is not among the store's allowed signers"},
		{"rig", "ma", lifecycle.Built, "is not among the store's allowed signers"},
	} {
		_, err := s.Transition(ctx, as(t, c.who), lifecycle.Move{Element: c.el, To: c.to, Reason: "x"})
		require.True(t, errors.As(err, &ae), "%s: %v", c.who, err)
		assert.Contains(t, err.Error(), c.want, c.who)
	}
	_, err := s.Transition(ctx, as(t, "mbonly"), lifecycle.Move{Element: "mb", To: lifecycle.Built, Reason: "built"})
	require.NoError(t, err)
	_, err = s.Transition(ctx, lifecycle.Auth{}, lifecycle.Move{Element: "mc", To: lifecycle.Built, Reason: "x"})
	assert.ErrorContains(t, err, "no identity")
	if e.name == lifecycle.SQLite {
		_, err = s.Transition(ctx, lifecycle.DBRoleAuth(), lifecycle.Move{Element: "mc", To: lifecycle.Built, Reason: "x"})
		assert.ErrorContains(t, err, "a SQLite store has no database roles")
	}
	_, err = s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "mc", To: lifecycle.Installed, Reason: "x"})
	var na *lifecycle.NotAllowedError
	require.True(t, errors.As(err, &na))
	assert.Equal(t, "mc cannot go from design to installed: from design an element may go to built, decommissioned", err.Error())
	_, err = s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "mc", To: lifecycle.Built})
	assert.ErrorContains(t, err, "give a reason")

	// the policy: odm may build mc only once the admin says so
	p := policy(t, nil)
	p.Members["ssh:odm"] = lifecycle.Member{Roles: []string{"vendor"}, Modules: []string{"mb"}}
	_, err = s.SetPolicy(ctx, as(t, "odm"), p, "x")
	require.True(t, errors.As(err, &ae))
	v, err := s.SetPolicy(ctx, as(t, "ops"), p, "odm builds mb only")
	require.NoError(t, err)
	assert.Equal(t, int64(2), v)
	_, err = s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "mc", To: lifecycle.Built, Reason: "x"})
	assert.ErrorContains(t, err, "outside the member's modules (mb)")
	locked := policy(t, nil)
	delete(locked.Members, "ssh:ops")
	_, err = s.SetPolicy(ctx, as(t, "ops"), locked, "x")
	assert.ErrorContains(t, err, "would not let ssh:ops change it again")
	// every statement verifies against the policy of its time
	checkOK(t, s)
}

// Concurrent transitions of one element: exactly one wins, the others
// get a conflict, nothing is lost.
func testConflict(t *testing.T, e *engine) {
	ctx := context.Background()
	s, cfg := newStore(t, e, newClock(), nil)
	before, err := s.Info(ctx)
	require.NoError(t, err)
	const n = 6
	errs := make(chan error, n)
	start := make(chan struct{})
	// the clients wait for each other's locks as long as it takes (a
	// busy machine may hold them for seconds): the test is about
	// conflicts, not about giving up
	cfg.BusyTimeout = 5 * time.Minute
	for range n {
		// each its own client, as on the team's machines
		c, err := lifecycle.Open(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		go func() {
			<-start
			_, err := c.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma/r01", To: lifecycle.Built, Reason: "built"})
			errs <- err
		}()
	}
	close(start)
	won, conflicts := 0, 0
	for range n {
		err := <-errs
		switch {
		case err == nil:
			won++
		case lifecycle.IsConflict(err):
			conflicts++
			assert.Contains(t, err.Error(), "conflict: ma/r01 changed after this change was prepared")
		default:
			var na *lifecycle.NotAllowedError
			if errors.As(err, &na) {
				conflicts++ // it read the element after the winner moved it
				continue
			}
			t.Errorf("unexpected: %v", err)
		}
	}
	assert.Equal(t, 1, won)
	assert.Equal(t, n-1, conflicts)
	after, err := s.Info(ctx)
	require.NoError(t, err)
	rack, err := s.List(ctx, lifecycle.Filter{Under: "ma/r01"})
	require.NoError(t, err)
	assert.Equal(t, before.Events+int64(len(rack)), after.Events, "one transition's events, no more, no less")
	checkOK(t, s)
}

// A clock behind the store's history is refused, and nothing written.
func testClock(t *testing.T, e *engine) {
	ctx := context.Background()
	clk := newClock()
	s, _ := newStore(t, e, clk, nil)
	clk.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	_, err := s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma/r01", To: lifecycle.Built, Reason: "built"})
	require.NoError(t, err)
	clk.Set(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	_, err = s.Transition(ctx, as(t, "integrator"), lifecycle.Move{Element: "ma/r01", To: lifecycle.Integrated, Reason: "integrated"})
	var ce *lifecycle.ClockError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Regexp(t, `^the clock reads 2026-11-30T00:00:00\.\d+Z, before the last event of ma/r01 \(2026-12-01T00:00:00\.\d+Z, by ssh:odm\): this machine's clock is behind or went backwards`, err.Error())
	err = s.SetHold(ctx, as(t, "operator"), "ma/r01/compute-01", "person:operator", "x")
	require.True(t, errors.As(err, &ce), "%v", err)
	el, err := s.Show(ctx, "ma/r01", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, lifecycle.Built, el.State)
	checkOK(t, s)
}

// A store of a newer schema is refused, with what to do.
func testNewer(t *testing.T, e *engine) {
	ctx := context.Background()
	s, cfg := newStore(t, e, newClock(), nil)
	_, err := s.DB().ExecContext(ctx, "INSERT INTO seam_schema (version, name, applied_at, tool) VALUES (99, 'future', 0, 'seam 9.0.0')")
	require.NoError(t, err)
	_, err = lifecycle.Open(ctx, cfg)
	var se *lifecycle.StoreError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, lifecycle.StoreNewer, se.Kind)
	assert.Contains(t, err.Error(), "the store is at schema version 99 (written by seam 9.0.0); this seam")
	assert.Contains(t, err.Error(), fmt.Sprintf("knows versions up to %d: use that seam or a newer one", lifecycle.SchemaVersion()))
}

// The history is append-only, and check finds what was changed behind
// the store's back.
func testTamper(t *testing.T, e *engine) {
	ctx := context.Background()
	s, _ := newStore(t, e, newClock(), nil)
	_, err := s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma/r01", To: lifecycle.Built, Reason: "built"})
	require.NoError(t, err)
	_, err = s.DB().ExecContext(ctx, "UPDATE events SET reason = 'rewritten'")
	assert.ErrorContains(t, err, "append-only")
	_, err = s.DB().ExecContext(ctx, "DELETE FROM events")
	assert.ErrorContains(t, err, "append-only")
	_, err = s.DB().ExecContext(ctx, "UPDATE elements SET state = 'operating' WHERE key = 'ma/r01/compute-03'")
	require.NoError(t, err)
	r, err := s.Check(ctx, nil)
	require.NoError(t, err)
	require.Len(t, r.Problems, 1)
	assert.Contains(t, r.Problems[0], "ma/r01/compute-03 is operating since")
}

// legacyHold is a hold as a store before the ledger (schema 2) kept it:
// its owner the identity that set it, its kind of the old vocabulary.
type legacyHold struct{ node, kind, owner, reason string }

// undoLedger takes a store back to schema 2 (before the chain and the
// ledger), with holds in the old table and hold_set events in the old
// form.
func undoLedger(t *testing.T, e *engine, s *lifecycle.Store, holds []legacyHold) {
	t.Helper()
	ctx := context.Background()
	collate := ""
	if e.name == lifecycle.Postgres {
		collate = ` COLLATE "C"`
	}
	for _, q := range []string{"DROP INDEX events_kind", "DELETE FROM seam_schema WHERE version = 5", "DROP TABLE stamps", "DROP TABLE seals", "ALTER TABLE events DROP COLUMN hash", "DELETE FROM seam_schema WHERE version = 4", "DROP TABLE ledger_nodes", "DROP TABLE ledger_fence", "DROP TABLE holds",
		"CREATE TABLE holds (node TEXT" + collate + " NOT NULL, kind TEXT NOT NULL, owner TEXT NOT NULL, reason TEXT NOT NULL, since BIGINT NOT NULL, event BIGINT NOT NULL, PRIMARY KEY (node, kind, owner))",
		"DELETE FROM seam_schema WHERE version = 3"} {
		_, err := s.DB().ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	var last int64
	require.NoError(t, s.DB().QueryRowContext(ctx, "SELECT max(seq) FROM events").Scan(&last))
	q := func(sql string) string {
		if e.name != lifecycle.Postgres {
			return sql
		}
		n := 0
		return regexp.MustCompile(`\?`).ReplaceAllStringFunc(sql, func(string) string { n++; return fmt.Sprintf("$%d", n) })
	}
	for i, h := range holds {
		since := time.Date(2026, 10, 2, 0, 0, i, 0, time.UTC)
		data, _ := json.Marshal(map[string]any{"node": h.node, "owner": h.owner, "kind": h.kind, "reason": h.reason, "since": since})
		var seq int64
		require.NoError(t, s.DB().QueryRowContext(ctx, q(`INSERT INTO events (at, element, kind, prev_state, state, since, prev_serial, serial, actor, db_user, reason, cause, policy, evidence, statement, signature, data)
			SELECT ?, key, 'hold_set', state, state, since, serial, serial, ?, '', ?, ?, 1, '', '', '', ? FROM elements WHERE key = ? RETURNING seq`),
			since.UnixMicro(), h.owner, h.reason, last, string(data), h.node).Scan(&seq))
		_, err := s.DB().ExecContext(ctx, q("INSERT INTO holds (node, kind, owner, reason, since, event) VALUES (?, ?, ?, ?, ?, ?)"), h.node, h.kind, h.owner, h.reason, since.UnixMicro(), seq)
		require.NoError(t, err)
		_, err = s.DB().ExecContext(ctx, q("UPDATE elements SET last_at = ? WHERE key = ?"), since.UnixMicro(), h.node)
		require.NoError(t, err)
	}
}

// A store of schema 2 (holds owned by identities, kinds of the old
// vocabulary) is migrated to the ledger when it is opened: each hold
// gets its owner in the one vocabulary and keeps who placed it; the
// old events read the same way, so check agrees.
func testLedgerMigrates(t *testing.T, e *engine) {
	ctx := context.Background()
	s, cfg := stageCfg(t, e, newClock(), "asbuilt")
	undoLedger(t, e, s, []legacyHold{
		{"ma/r01/compute-03", "facility-alarm", "ssh:facilityd", "l1 lost redundancy"},
		{"ma/r01/compute-03", "person", "ssh:operator", "reseating a cable"},
		{"ma/r01/compute-04", "burn-in", "ssh:cx", "burn-in under way"},
		{"ma/r01/compute-05", "maintenance", "lifecycle", "maintenance by ssh:operator: swap a NIC"},
	})
	require.NoError(t, s.Close())
	again, err := lifecycle.Open(ctx, cfg)
	require.NoError(t, err)
	defer again.Close()
	hs, err := again.Holds(ctx, "")
	require.NoError(t, err)
	var got []string
	for _, h := range hs {
		got = append(got, fmt.Sprintf("%s %s %s by %s", h.Node, h.Owner, h.Kind, h.By))
	}
	assert.Equal(t, []string{
		"ma/r01/compute-03 facility:facilityd facility by ssh:facilityd",
		"ma/r01/compute-03 person:operator person by ssh:operator",
		"ma/r01/compute-04 burnin:cx burnin by ssh:cx",
		"ma/r01/compute-05 maintenance:lifecycle maintenance by lifecycle",
	}, got)
	r, err := again.Check(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, r.Problems)
	assert.Equal(t, 4, r.Holds)
}
