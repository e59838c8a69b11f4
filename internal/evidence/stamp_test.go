package evidence

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/tsa"
	"github.com/seamdc/seam/internal/tsa/tsatest"
)

// A bundle with an authority stamps its seals: the last seal of a
// session that stops (Close) and of a run that ends (Finish, before the
// manifest) included. The audit verifies each stamp against the roots
// and names the newest seal covered; with another authority's roots
// every stamp is a problem; without roots they are counted only.
func TestStampsOnCloseAndFinish(t *testing.T) {
	site, other := tsatest.Start(t, "site TSA"), tsatest.Start(t, "other TSA")
	roots, err := tsa.ParseRoots("site", site.RootPEM)
	require.NoError(t, err)
	otherRoots, err := tsa.ParseRoots("other", other.RootPEM)
	require.NoError(t, err)
	signer, _ := testSigner(t)
	opt := Options{Signer: SSHSigner(signer), By: "engineer", TimeStamp: &tsa.Authority{URL: site.URL, Roots: roots}}
	dir, c := t.TempDir(), clock.NewFake(t0)

	b, err := Create(dir, c, opt)
	require.NoError(t, err)
	_, err = b.Append("case_start", "SAT-001", map[string]int{"n": 1})
	require.NoError(t, err)
	require.NoError(t, b.Seal())
	require.NoError(t, b.Close()) // a session's end (--until)
	rep, err := Audit(dir, AuditOptions{TimeStampRoots: roots})
	require.NoError(t, err)
	require.NotZero(t, lastSeal(rep))
	assert.Equal(t, lastSeal(rep), rep.StampedSeal, "the last seal of the session is stamped before it closes")
	assert.Zero(t, rep.UnstampedSeals)
	for _, p := range rep.All() {
		assert.NotContains(t, p, "stamp")
	}

	b, _, err = Resume(dir, c, opt, nil)
	require.NoError(t, err)
	_, err = b.Append(KindCaseEnd, "SAT-001", map[string]int{"n": 1})
	require.NoError(t, err)
	_, err = b.Finish(Meta{ToolVersion: "test", PlanDigest: "sha256:plan", Outcome: "passed"})
	require.NoError(t, err)
	rep, err = Audit(dir, AuditOptions{TimeStampRoots: roots})
	require.NoError(t, err)
	assert.Empty(t, stampProblems(rep))
	assert.Equal(t, lastSeal(rep), rep.StampedSeal, "the seal that ends the run is stamped")
	assert.Zero(t, rep.UnstampedSeals)
	assert.Contains(t, rep.StampedBy, "site TSA")
	assert.Contains(t, rep.StampLine(true), "time-stamped: seal record ")

	rep, err = Audit(dir, AuditOptions{TimeStampRoots: otherRoots})
	require.NoError(t, err)
	require.NotEmpty(t, stampProblems(rep))
	assert.Contains(t, stampProblems(rep)[0], "not an authority the site trusts")
	assert.Zero(t, rep.StampedSeal)

	rep, err = Audit(dir, AuditOptions{})
	require.NoError(t, err)
	assert.Empty(t, stampProblems(rep))
	assert.Equal(t, rep.Stamps, rep.StampsUnverified)
	assert.Contains(t, rep.StampLine(false), "present, not verified")
}

func stampProblems(rep *Report) []string {
	var out []string
	for _, p := range rep.All() {
		if strings.Contains(p, "stamp") {
			out = append(out, p)
		}
	}
	return out
}

func lastSeal(rep *Report) int64 {
	last := int64(0)
	for _, s := range rep.Signatures {
		if s.Role != "manifest" {
			last = max(last, s.Record)
		}
	}
	return last
}
