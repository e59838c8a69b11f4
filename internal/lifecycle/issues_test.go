package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/plan"
)

var (
	retryOnce sync.Once
	retryDir  string
	retryCase string
	retryErr  error
)

// retried is the failing bundle (the power skid's slow recovery) with
// its failed case run again, the defect cleared, in a signed retry
// amendment: made once, in a copy.
func retried(t *testing.T) (dir, caseID string) {
	b := satBundles(t)
	retryOnce.Do(func() {
		retryDir = filepath.Join(fixtureDir, "bundle-ma-retried")
		if retryErr = os.CopyFS(retryDir, os.DirFS(b.failing)); retryErr != nil {
			return
		}
		rep, err := evidence.Verify(b.failing, nil)
		if err != nil {
			retryErr = err
			return
		}
		for _, c := range rep.Results.Cases {
			if c.Outcome == grade.Fail {
				retryCase = c.ID
				break
			}
		}
		root, _ := filepath.Abs("../..")
		out, err := self("sat", "run", "--retry", retryDir, "--case", retryCase, "--sim", "--time-scale", "max",
			"--contracts", filepath.Join(root, "contracts", "examples", "threemodule"), "--fixtures", filepath.Join(root, "fixtures"),
			"--sign-key", team(t)["rig"].file)
		if err != nil {
			retryErr = fmt.Errorf("sat run --retry: %w\n%s", err, out)
		}
	})
	require.NoError(t, retryErr)
	return retryDir, retryCase
}

// The SAT of module ma with the power skid's slow recovery opens an
// issue owned by the power vendor for the recovery clause; the gate
// refuses naming it, and so does commissioning; a waiver by anyone but
// the accepting engineer is refused; a passing retry of the case closes
// it, the gate passes and the module is commissioned on it. Recording a
// bundle twice does nothing; an edited issue is found by check.
func testIssues(t *testing.T, e *engine) {
	ctx := context.Background()
	b := satBundles(t)
	s := installed(t, e, newClock())

	recs, err := s.RecordBundle(ctx, as(t, "cx"), b.failing)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Len(t, recs[0].Opened, 1, "one failed case, one issue")
	is := recs[0].Opened[0]
	assert.Equal(t, "ma-1", is.ID)
	assert.Equal(t, "ma", is.Module)
	assert.Equal(t, "VoltSkid", is.Owner, "the power skid's guarantee failed: its vendor owns it")
	assert.Equal(t, lifecycle.OwnerSupplier, is.OwnerRole)
	assert.Equal(t, "transient", is.Kind)
	assert.Equal(t, plan.L4, is.Level)
	assert.Equal(t, plan.Major, is.Severity)
	assert.Contains(t, is.Description, "recovery_time")
	assert.Regexp(t, `measured [0-9.]+ s against the limit [0-9.]+ s`, is.Description)
	assert.NotEmpty(t, is.ClauseDigest)
	assert.Equal(t, is.Opened.Add(7*24*time.Hour), is.Due)

	again, err := s.RecordBundle(ctx, as(t, "cx"), b.failing)
	require.NoError(t, err)
	require.Len(t, again, 1)
	assert.True(t, again[0].Already, "the same bundle twice is a no-op")

	g, err := s.Gate(ctx, plan.L4, "ma")
	require.NoError(t, err)
	assert.False(t, g.Pass())
	assert.Contains(t, fmt.Sprint(g.Missing), "ma-1")
	g3, err := s.Gate(ctx, plan.L3, "ma")
	require.NoError(t, err)
	assert.True(t, g3.Pass(), "the steady values passed: %v", g3.Missing)

	_, err = s.Transition(ctx, as(t, "cx"), lifecycle.Move{Element: "ma", To: lifecycle.Commissioned, Reason: "SAT"})
	var ee *lifecycle.EvidenceError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Contains(t, err.Error(), "1 open major issue(s), at most 0 allowed: ma-1")

	// only the accepting engineer waives
	_, err = s.WaiveIssue(ctx, as(t, "cx"), "ma-1", "good enough")
	var ae *lifecycle.AccessError
	require.True(t, errors.As(err, &ae), "the commissioning agent may not waive: %v", err)
	_, err = s.WaiveIssue(ctx, as(t, "ops"), "ma-1", "")
	assert.ErrorContains(t, err, "only with a reason")
	assigned, err := s.AssignIssue(ctx, as(t, "cx"), "ma-1", "CoolFlow", "the loop's valve, says VoltSkid")
	require.NoError(t, err)
	assert.Equal(t, "CoolFlow", assigned.Owner)
	assert.True(t, assigned.Open())

	// the retry closes it
	dir, caseID := retried(t)
	assert.Equal(t, is.Case, caseID)
	recs, err = s.RecordBundle(ctx, as(t, "cx"), dir)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Empty(t, recs[0].Opened)
	require.Len(t, recs[0].Closed, 1)
	assert.Equal(t, "ma-1", recs[0].Closed[0].Issue)
	assert.Equal(t, 1, recs[0].Closed[0].Segment)
	log, err := s.IssuesLog(ctx, "ma")
	require.NoError(t, err)
	closed := log.Issue("ma-1")
	require.NotNil(t, closed)
	assert.Equal(t, lifecycle.IssueClosed, closed.Status)
	assert.Equal(t, []string{"opened", "assigned", "closed"}, ops(closed.History))
	_, err = s.WaiveIssue(ctx, as(t, "ops"), "ma-1", "late")
	assert.ErrorContains(t, err, "closed already")

	g, err = s.Gate(ctx, plan.L4, "ma")
	require.NoError(t, err)
	assert.True(t, g.Pass(), "%v", g.Missing)
	mv, err := s.Transition(ctx, as(t, "cx"), lifecycle.Move{Element: "ma", To: lifecycle.Commissioned, Reason: "gates L3 and L4 passed"})
	require.NoError(t, err)
	require.NotEmpty(t, mv.Evidence)
	assert.Equal(t, dir, mv.Evidence[len(mv.Evidence)-1].Ref)
	checkOK(t, s)

	// an issue's assignment deleted, or an issue edited, behind the
	// store's back
	unguard(t, e, s)
	sqlExec(t, e, s, "DELETE FROM events WHERE kind = 'issue'")
	assert.Contains(t, fmt.Sprint(problems(t, s, nil)), "is not what the chain says was written", "a deleted assignment breaks the chain")
	sqlExec(t, e, s, "UPDATE events SET data = replace(data, 'VoltSkid', 'GPUWorks') WHERE kind = 'commissioning'")
	got := problems(t, s, nil)
	assert.Contains(t, fmt.Sprint(got), "its data is not what its signed statement's digest says")
	assert.Contains(t, fmt.Sprint(got), "is not what the chain says was written")
}

func ops(h []lifecycle.IssueChange) []string {
	var out []string
	for _, c := range h {
		out = append(out, c.Op)
	}
	return out
}
