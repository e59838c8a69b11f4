package evidence

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/grade"
)

// A capture attached in a signed amendment is found and graded by every
// audit from the attached bytes; what it cannot be graded against is
// an ERROR that says why, and an edited capture file is refused.
func TestCaptureInSignedAmendment(t *testing.T) {
	dir := t.TempDir()
	signer, _ := testSigner(t)
	c := clock.NewFake(t0)
	run(t, dir, c, true, signer)
	cfg, err := os.ReadFile("../../../shared/samples/comtrade/sample_ascii.cfg")
	require.NoError(t, err)
	dat, err := os.ReadFile("../../../shared/samples/comtrade/sample_ascii.dat")
	require.NoError(t, err)

	a, err := Amend(dir, SSHSigner(signer), Amendment{Purpose: PurposeAttach, Role: RoleAttach, By: "Jane Roe"}, c)
	require.NoError(t, err)
	rec := CaptureRecord{Case: "SAT-001", Channel: "IA", Nominal: 100, Mask: "ITIC", Points: []grade.MaskPoint{{DurationS: 1e9, MinPct: 90, MaxPct: 110}}}
	require.NoError(t, a.AttachCapture(rec, []string{"ev.cfg", "ev.dat"}, [][]byte{cfg, dat}))
	require.NoError(t, a.Close())

	rep, err := Verify(dir, nil)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	require.Len(t, rep.Captures, 1)
	got := rep.Captures[0]
	assert.Equal(t, []string{"attachments/ev.cfg", "attachments/ev.dat"}, got.Files)
	assert.Equal(t, 1, got.Segment)
	assert.Equal(t, grade.Error, got.Result.Verdict.Outcome)
	assert.Contains(t, got.Result.Verdict.Detail, "case SAT-001 has no completed attempt with a timeline to align the capture on")
	assert.Contains(t, rep.Segments[0].Adds, "a capture record")

	// the file is covered: an edit is a problem, and the capture is not graded from it
	require.NoError(t, os.WriteFile(filepath.Join(dir, AttachDir, "ev.dat"), bytes.Repeat([]byte("x"), len(dat)), 0o644))
	rep, err = Verify(dir, nil)
	require.NoError(t, err)
	assert.NotEmpty(t, rep.Problems)
	require.Len(t, rep.Captures, 1)
	assert.Equal(t, grade.Error, rep.Captures[0].Result.Verdict.Outcome)
}

func TestAttachCaptureNeedsWhatToGrade(t *testing.T) {
	dir := t.TempDir()
	signer, _ := testSigner(t)
	c := clock.NewFake(t0)
	run(t, dir, c, true, signer)
	a, err := Amend(dir, SSHSigner(signer), Amendment{Purpose: PurposeAttach, Role: RoleAttach, By: "Jane Roe"}, c)
	require.NoError(t, err)
	defer a.Abandon()
	assert.ErrorContains(t, a.AttachCapture(CaptureRecord{Case: "SAT-001"}, nil, nil), "a capture needs a case, a channel and a mask")
}
