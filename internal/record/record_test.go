package record

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/plan"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

func signed(party, key string) plan.Signature {
	return plan.Signature{Party: party, Status: "signed", Key: key, SignedAt: "2026-10-01"}
}

// boundary l1-ma, as a plan compiled before (missing) or after (signed)
// CoolFlow and GPUWorks signed it carries it.
func boundary(signedNow bool) plan.Boundary {
	b := plan.Boundary{ID: "l1-ma", Supplier: plan.Party{Module: "l1", Party: "CoolFlow"}, Consumer: plan.Party{Module: "ma", Party: "GPUWorks"},
		Signatures: []plan.Signature{{Party: "CoolFlow", Status: "missing"}, {Party: "GPUWorks", Status: "missing"}}}
	if signedNow {
		b.Signatures = []plan.Signature{signed("CoolFlow", "SHA256:cool"), signed("GPUWorks", "SHA256:gpu")}
	}
	return b
}

func cx(id, level, kind, outcome string) lifecycle.CxCase {
	return lifecycle.CxCase{ID: id, Level: level, Kind: kind, Boundary: "l1-ma", Outcome: outcome}
}

// exampleLog is the issues log of a site with two modules: ma's SAT
// failed (ma-1, closed by a retry in a copy of the bundle), was run
// again and passed; ma-2 was waived and ma-10 is open (so the gate of
// L4 refuses); mb's IST bundle has a case of a level the site does not
// have. Bundle sat-2 was recorded twice from one directory (a sign-off
// in between moved its head).
func exampleLog() *lifecycle.Log {
	rules := plan.DefaultCommissioning()
	bundle := func(id, dir, head, module string, at time.Time, b []plan.Boundary, cases ...lifecycle.CxCase) *lifecycle.CxBundle {
		return &lifecycle.CxBundle{Bundle: id, Dir: dir, Manifest: "sha256:m-" + id, Head: head, Plan: "sha256:plan-" + module, Level: plan.SAT,
			Module: module, Outcome: "passed", SignedBy: "SHA256:rig", Rules: rules, Boundaries: b, Cases: cases, RecordedAt: at, RecordedBy: "cx"}
	}
	failing := bundle("sat-1", "evidence/sat-1", "sha256:h1", "ma", t0, []plan.Boundary{boundary(false)},
		cx("steady-1", plan.L3, plan.Steady, "PASS"), cx("recovery-1", plan.L4, plan.Transient, "FAIL"))
	failing.Outcome = "failed"
	retried := bundle("sat-1", "evidence/sat-1-retried", "sha256:h1r", "ma", t0.Add(2*time.Hour), []plan.Boundary{boundary(false)},
		cx("steady-1", plan.L3, plan.Steady, "PASS"), cx("recovery-1", plan.L4, plan.Transient, "PASS"))
	again := bundle("sat-2", "/abs/evidence/sat-2", "sha256:h2", "ma", t0.Add(3*time.Hour), []plan.Boundary{boundary(true)},
		cx("steady-1", plan.L3, plan.Steady, "PASS"), cx("recovery-1", plan.L4, plan.Transient, "PASS"), cx("trip-1", plan.L4, plan.Failure, "PASS"))
	signedOff := *again
	signedOff.Head, signedOff.RecordedAt = "sha256:h2b", t0.Add(4*time.Hour)
	ist := bundle("ist-1", "evidence/ist", "sha256:hi", "mb", t0.Add(5*time.Hour), nil,
		cx("grid-1", plan.L5, plan.Grid, "PASS"), cx("odd-1", "L9", plan.Steady, "ERROR"))
	ist.Level, ist.Outcome = plan.IST, "error"
	istMA := *ist
	istMA.Module, istMA.Cases = "ma", []lifecycle.CxCase{cx("grid-1", plan.L5, plan.Grid, "PASS")}

	issue := func(id, level, status string, closure *lifecycle.Closure) *lifecycle.Issue {
		return &lifecycle.Issue{ID: id, Module: "ma", Level: level, Case: "recovery-1", Kind: plan.Transient, Boundary: "l1-ma", Outcome: "FAIL",
			Description: "recovery_time <b>too slow</b>", Severity: plan.Major, Owner: "CoolFlow", OwnerRole: lifecycle.OwnerSupplier, Bundle: "sat-1",
			Manifest: "sha256:m-sat-1", Opened: t0, OpenedBy: "cx", Due: t0.Add(7 * 24 * time.Hour), Status: status, Closure: closure}
	}
	return &lifecycle.Log{
		Bundles: []*lifecycle.CxBundle{failing, retried, again, &signedOff, ist, &istMA},
		Issues: []*lifecycle.Issue{
			issue("ma-1", plan.L4, lifecycle.IssueClosed, &lifecycle.Closure{Issue: "ma-1", Kind: lifecycle.IssueClosed, At: t0.Add(2 * time.Hour), By: "cx",
				Reason: "passed in retry amendment 1", Bundle: "sat-1", Manifest: "sha256:m-sat-1", Segment: 1}),
			issue("ma-10", plan.L4, lifecycle.IssueOpen, nil),
			issue("ma-2", plan.L3, lifecycle.IssueWaived, &lifecycle.Closure{Issue: "ma-2", Kind: lifecycle.IssueWaived, At: t0.Add(6 * time.Hour), By: "accept",
				Reason: "0.2 s over, accepted with the owner"}),
		},
	}
}

func build(t *testing.T) *Record {
	t.Helper()
	r, err := Build(Source{Site: "threemodule", Store: "store-1", Generated: t0.Add(24 * time.Hour).In(time.FixedZone("CET", 3600)), Tool: "test"}, exampleLog())
	require.NoError(t, err)
	return r
}

func TestBuildBundles(t *testing.T) {
	r := build(t)
	assert.Equal(t, Format, r.Format)
	assert.Equal(t, "threemodule", r.Site)
	assert.Equal(t, time.UTC, r.Generated.Location())
	type row struct{ id, dir, head string }
	var got []row
	for _, b := range r.Bundles {
		got = append(got, row{b.ID, b.Dir, b.Head})
	}
	assert.Equal(t, []row{
		{"ist-1", "evidence/ist", "sha256:hi"},
		{"sat-1", "evidence/sat-1", "sha256:h1"},
		{"sat-1", "evidence/sat-1-retried", "sha256:h1r"},
		{"sat-2", "/abs/evidence/sat-2", "sha256:h2b"}, // its newest recording's head
	}, got, "every bundle once per directory, sorted")
	assert.Equal(t, []string{"ma", "mb"}, r.Bundles[0].Modules, "the IST bundle was recorded for both modules")
	assert.Equal(t, t0.Add(4*time.Hour), r.Bundles[3].RecordedAt)
	assert.Equal(t, "sha256:m-sat-2", r.Bundles[3].Manifest)
}

func TestBuildLevels(t *testing.T) {
	r := build(t)
	require.Len(t, r.Modules, 2)
	ma := r.Modules[0]
	assert.Equal(t, "ma", ma.Name)
	var ids, names []string
	for _, l := range ma.Levels {
		ids, names = append(ids, l.ID), append(names, l.Name)
	}
	assert.Equal(t, []string{"L1", "L2", "L3", "L4", "L5"}, ids)
	assert.Equal(t, []string{"factory", "installation", "functional", "performance", "integrated"}, names)

	l1, l3, l4, l5 := ma.Levels[0], ma.Levels[2], ma.Levels[3], ma.Levels[4]
	assert.Empty(t, l1.Bundles)
	require.NotNil(t, l1.Gate)
	assert.False(t, l1.Gate.Pass, "no case of L1 is recorded")

	require.Len(t, l4.Bundles, 3, "sat-1 from two directories, and sat-2")
	assert.Equal(t, map[string]int{"FAIL": 1}, l4.Bundles[0].Cases)
	assert.Equal(t, "failed", l4.Bundles[0].Outcome)
	assert.Equal(t, map[string]int{"PASS": 1}, l4.Bundles[1].Cases)
	assert.Equal(t, map[string]int{"PASS": 2}, l4.Bundles[2].Cases)
	require.NotNil(t, l4.Gate)
	assert.False(t, l4.Gate.Pass)
	assert.Equal(t, map[string][]string{plan.Major: {"ma-10"}}, l4.Gate.Open)
	assert.Contains(t, strings.Join(l4.Gate.Missing, "; "), "ma-10")
	var issues []string
	for _, is := range l4.Issues {
		issues = append(issues, is.ID+" "+is.Status)
	}
	assert.Equal(t, []string{"ma-1 closed", "ma-10 open"}, issues, "by number, not as strings")
	require.NotNil(t, l4.Issues[0].Closure)
	assert.Equal(t, 1, l4.Issues[0].Closure.Segment)

	assert.True(t, l3.Gate.Pass, "%v", l3.Gate.Missing)
	require.Len(t, l3.Issues, 1)
	assert.Equal(t, "ma-2", l3.Issues[0].ID)
	require.Len(t, l5.Bundles, 1)
	assert.Equal(t, "ist-1", l5.Bundles[0].ID)

	require.Len(t, ma.Waivers, 1)
	assert.Equal(t, Waiver{Issue: "ma-2", Level: plan.L3, Case: "recovery-1", Severity: plan.Major, Owner: "CoolFlow", At: t0.Add(6 * time.Hour), By: "accept",
		Reason: "0.2 s over, accepted with the owner"}, ma.Waivers[0])

	mb := r.Modules[1]
	last := mb.Levels[len(mb.Levels)-1]
	assert.Equal(t, "L9", last.ID, "a level the site's rules lack comes last")
	assert.Nil(t, last.Gate)
	require.Len(t, last.Bundles, 1)
	assert.Equal(t, map[string]int{"ERROR": 1}, last.Bundles[0].Cases)
}

func TestBuildContracts(t *testing.T) {
	ma := build(t).Modules[0]
	require.Len(t, ma.Contracts, 2, "l1-ma as unsigned, then as signed")
	first, second := ma.Contracts[0], ma.Contracts[1]
	assert.Equal(t, "l1-ma", first.Boundary)
	assert.Equal(t, "CoolFlow", first.Supplier.Party)
	assert.Equal(t, "GPUWorks", first.Consumer.Party)
	assert.Equal(t, "missing", first.Signatures[0].Status)
	assert.Equal(t, []string{"sat-1"}, first.Bundles)
	assert.Equal(t, []plan.Signature{signed("CoolFlow", "SHA256:cool"), signed("GPUWorks", "SHA256:gpu")}, second.Signatures)
	assert.Equal(t, []string{"sat-2"}, second.Bundles)
	assert.Empty(t, build(t).Modules[1].Contracts)
}

func TestEncodeIsDeterministicAndStrict(t *testing.T) {
	a, err := Encode(build(t))
	require.NoError(t, err)
	for range 5 {
		b, err := Encode(build(t))
		require.NoError(t, err)
		require.Equal(t, string(a), string(b), "the same log gives the same bytes")
	}
	back, err := Decode(a)
	require.NoError(t, err)
	again, err := Encode(back)
	require.NoError(t, err)
	assert.Equal(t, string(a), string(again))

	_, err = Decode(bytes.Replace(a, []byte(`"site"`), []byte(`"sight"`), 1))
	assert.ErrorContains(t, err, `unknown field "sight"`)
	_, err = Decode(bytes.Replace(a, []byte(Format), []byte("seam.record/v0"), 1))
	assert.ErrorContains(t, err, `format "seam.record/v0"`)
}

func TestHTMLListsEverything(t *testing.T) {
	r := build(t)
	r.Bundles[3].Signatures = []Signature{{Role: "acceptance", By: "A. Engineer", Key: "SHA256:accept", At: t0}}
	var buf bytes.Buffer
	require.NoError(t, HTML(&buf, r))
	page := buf.String()
	for _, want := range []string{
		"Commissioning handover record: threemodule", "sat verify RECORD_DIR --trust KEYS",
		"evidence/sat-1-retried", "/abs/evidence/sat-2", "sha256:m-ist-1", "sha256:m-sat-2",
		">ma-1<", ">ma-2<", ">ma-10<", "0.2 s over, accepted with the owner", "passed in retry amendment 1",
		"A. Engineer", "SHA256:accept", "SHA256:cool", "SHA256:gpu", "missing: not signed",
		"L4 performance", "REFUSES", "PASSES", "not a level of the site&#39;s commissioning",
		"1 open, 1 closed by a passing retry, 1 waived",
	} {
		assert.Contains(t, page, want)
	}
	assert.NotContains(t, page, "<b>too slow</b>", "text from the log is escaped")
	assert.Contains(t, page, "&lt;b&gt;too slow&lt;/b&gt;")
	assert.NotContains(t, page, "http", "no external asset")
}

func TestWriteSigns(t *testing.T) {
	dir := t.TempDir()
	s := newSigner(t)
	files, err := Write(dir, build(t), s)
	require.NoError(t, err)
	require.Len(t, files, 3)
	r, raw, err := Read(dir)
	require.NoError(t, err)
	assert.Equal(t, "threemodule", r.Site)
	sig := mustRead(t, dir, SigFile)
	fp, err := CheckSignature(raw, sig, nil)
	require.NoError(t, err)
	assert.Equal(t, fingerprint(s), fp)

	// written again unsigned, the old signature goes
	_, err = Write(dir, build(t), nil)
	require.NoError(t, err)
	assert.NoFileExists(t, dir+"/"+SigFile)
}
