package runner

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/results"
)

const (
	steadyCase    = "sat.p1-ma.steady.voltage"
	transientCase = "sat.p1-ma.transient.step"
	leakCase      = "ist.l1-ma.failure.leak"
)

// A plan run in two shifts: the first stops after the case --until
// names, load zeroed, the bundle left to resume; the second runs a
// completed case again (a new attempt, which counts) and the rest.
func TestShiftsAndAnotherAttempt(t *testing.T) { synctest.Test(t, testShifts) }

func testShifts(t *testing.T) {
	g := newRig(t)
	cfg := g.config()
	cfg.Until = steadyCase
	res, err := g.run(cfg)
	require.NoError(t, err)
	require.NotNil(t, res.Abort)
	assert.Equal(t, results.CauseHandover, res.Abort.Cause)
	assert.Contains(t, res.Abort.Reason, "the shift ended after case "+steadyCase+" (--until); 2 case(s) not run yet, from "+transientCase)
	assert.Equal(t, 0, ExitCode(res), "a shift's end is no failure")
	assert.Equal(t, grade.Pass, res.Case(steadyCase).Outcome)
	assert.Equal(t, grade.Skipped, res.Case(leakCase).Outcome)
	assert.True(t, strings.HasPrefix(res.Case(leakCase).Reason, "not run yet: the shift ended"), res.Case(leakCase).Reason)
	assert.Zero(t, g.w.bank.appliedNow(), "the load is zeroed at a shift's end")
	rep, err := evidence.Verify(g.dir, nil)
	require.NoError(t, err)
	assert.True(t, rep.OK(), rep.All())
	assert.False(t, rep.Complete, "the bundle is left to resume")
	assert.Len(t, g.records("handover"), 1)

	// the next shift runs the steady case again, then (another session)
	// the rest: the run finishes
	cfg = g.config()
	cfg.Resume, cfg.Cases = true, []string{steadyCase}
	res, err = g.run(cfg)
	require.NoError(t, err)
	require.NotNil(t, res.Abort)
	assert.Equal(t, results.CauseHandover, res.Abort.Cause)
	assert.Contains(t, res.Abort.Reason, "the session ran the cases it was given")
	cfg.Cases = nil
	res, err = g.run(cfg)
	require.NoError(t, err)
	assert.Equal(t, results.Passed, res.Outcome, "%+v", res.Cases)
	assert.Nil(t, res.Abort)

	rep, err = evidence.Verify(g.dir, nil)
	require.NoError(t, err)
	assert.True(t, rep.OK(), rep.All())
	assert.True(t, rep.Complete)
	var attempts []int
	for _, ac := range rep.CaseAudits {
		if ac.End.Result.ID == steadyCase {
			attempts = append(attempts, ac.Attempt)
			assert.Zero(t, ac.Segment)
		}
	}
	assert.Equal(t, []int{1, 2}, attempts, "both attempts are kept and graded")
	assert.Equal(t, 4, rep.Regraded)
}

// --from starts later in the plan; cases before it are left for a later
// session, so the run does not finish.
func TestFromLeavesEarlierCasesToResume(t *testing.T) { synctest.Test(t, testFrom) }

func testFrom(t *testing.T) {
	g := newRig(t)
	cfg := g.config()
	cfg.From = leakCase
	res, err := g.run(cfg)
	require.NoError(t, err)
	assert.Equal(t, grade.Pass, res.Case(leakCase).Outcome)
	assert.Equal(t, grade.Skipped, res.Case(steadyCase).Outcome)
	require.NotNil(t, res.Abort)
	assert.Equal(t, results.CauseHandover, res.Abort.Cause)
	cfg = g.config()
	cfg.Resume = true
	res, err = g.run(cfg)
	require.NoError(t, err)
	assert.Equal(t, results.Passed, res.Outcome, "%+v", res.Cases)
}

func TestSelectionRefusesUnknownCases(t *testing.T) {
	p, raw := tinyPlan(t)
	base := Config{Plan: p, PlanBytes: raw, Site: &Site{}, Dir: "x", Operator: Simulator{}}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown case", func(c *Config) { c.Cases = []string{"sat.p1-ma.steady"} }, "--case sat.p1-ma.steady: the plan has no such case (contractc show PLAN lists them); did you mean " + steadyCase},
		{"unknown until", func(c *Config) { c.Until = "nope" }, "--until nope: the plan has no such case (contractc show PLAN lists them); its cases start " + steadyCase + ", " + transientCase + ", " + leakCase},
		{"case and from", func(c *Config) { c.Cases, c.From = []string{steadyCase}, leakCase }, "give --case or --from, not both"},
		{"until before from", func(c *Config) { c.From, c.Until = leakCase, steadyCase }, "--until " + steadyCase + " comes before --from " + leakCase + " in the plan"},
		{"retry without a key", func(c *Config) { c.Retry, c.Cases = true, []string{leakCase} }, "a retry is a signed amendment of the bundle: give --sign-key KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			_, err := New(cfg)
			assert.EqualError(t, err, tc.want)
		})
	}
}

// A case that failed is run again after the run finished, as a signed
// retry amendment: both attempts are kept and re-graded, the last
// counts, and the bundle verifies.
func TestRetryAmendsAFinishedRun(t *testing.T) { synctest.Test(t, testRetry) }

func testRetry(t *testing.T) {
	g := newRig(t)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	signer := evidence.SSHSigner(s)
	g.w.leakLag = 3 * time.Second // the alarm is late: the leak case fails
	cfg := g.config()
	cfg.Signer = signer
	res, err := g.run(cfg)
	require.NoError(t, err)
	require.Equal(t, results.Failed, res.Outcome)
	require.Equal(t, grade.Fail, res.Case(leakCase).Outcome)

	g.w.leakLag = 500 * time.Millisecond // the sensor's wiring fixed
	cfg.Retry, cfg.Cases = true, []string{leakCase}
	res, err = g.run(cfg)
	require.NoError(t, err)
	assert.Equal(t, grade.Pass, res.Case(leakCase).Outcome)
	assert.Equal(t, results.Passed, res.Outcome, "with the retry the run passed")
	assert.Zero(t, g.w.bank.appliedNow())

	rep, err := evidence.Verify(g.dir, nil)
	require.NoError(t, err)
	assert.True(t, rep.OK(), rep.All())
	// trusting the rig's key: the retry's samples, after the run's
	// last seal, are covered by the amendment's
	trusted, err := evidence.Verify(g.dir, []ssh.PublicKey{s.PublicKey()})
	require.NoError(t, err)
	assert.True(t, trusted.OK(), trusted.All())
	require.Len(t, rep.Segments, 1)
	seg := rep.Segments[0]
	assert.Equal(t, evidence.PurposeRetry, seg.Purpose)
	assert.Equal(t, leakCase, seg.Case)
	require.NotNil(t, seg.Seal)
	assert.Equal(t, []string{leakCase}, rep.Retried)
	assert.Equal(t, results.Passed, rep.Results.Outcome, "the reader's results take the retry")
	var outcomes []grade.Outcome
	for _, ac := range rep.CaseAudits {
		if ac.End.Result.ID == leakCase {
			outcomes = append(outcomes, ac.End.Result.Outcome)
			require.NotEmpty(t, ac.Verdicts, "every attempt is re-graded")
			assert.Equal(t, ac.End.Result.Outcome, ac.Verdicts[0].Outcome)
		}
	}
	assert.Equal(t, []grade.Outcome{grade.Fail, grade.Pass}, outcomes)
	back, err := results.Read(g.dir + "/" + evidence.ResultsFile)
	require.NoError(t, err)
	assert.Equal(t, results.Failed, back.Outcome, "results.json, signed with the run, is not rewritten")

	// another plan does not retry here
	cfg.Cases = []string{steadyCase}
	cfg.PlanBytes = append(append([]byte{}, g.raw...), ' ')
	_, err = g.run(cfg)
	assert.ErrorContains(t, err, "not this plan")
}

// A pause in a transient case stops it, brings its load to 0 kW and
// holds; after the resume the case runs again from its start, and only
// that attempt is graded.
func TestPauseHoldsAtZeroAndRunsTheCaseAgain(t *testing.T) { synctest.Test(t, testPause) }

func testPause(t *testing.T) {
	g := newRig(t)
	var pauseErr, early, unpauseErr error
	heldAt := -1.0
	time.AfterFunc(38*time.Second, func() { pauseErr = g.r.Pause("Ana") }) // in the transient case
	time.AfterFunc(38*time.Second+time.Millisecond, func() { early = g.r.Unpause("Ana") })
	time.AfterFunc(90*time.Second, func() { heldAt = g.w.bank.appliedNow() })
	time.AfterFunc(120*time.Second, func() { unpauseErr = g.r.Unpause("Ben") })
	res, err := g.run(g.config())
	require.NoError(t, err)
	require.NoError(t, pauseErr)
	require.NoError(t, unpauseErr)
	assert.ErrorContains(t, early, "bringing its load to 0 kW")
	assert.Zero(t, heldAt, "the load is at 0 kW while the run holds")
	assert.Equal(t, results.Passed, res.Outcome, "%+v", res.Cases)
	assert.Nil(t, res.Abort)
	pauses := g.records("pause")
	require.Len(t, pauses, 1)
	assert.Equal(t, transientCase, pauses[0].Case)
	resumed := g.records("resume_pause")
	require.Len(t, resumed, 1)
	assert.Contains(t, string(resumed[0].Data), `"by":"Ben"`)
	starts := 0
	for _, r := range g.records("case_start") {
		if r.Case == transientCase {
			starts++
		}
	}
	assert.Equal(t, 2, starts, "the paused case ran again from its start")
	assert.Len(t, g.records("case_end"), 3, "only the finished attempt ended")
	assert.True(t, res.Case(transientCase).Started.After(g.at(120*time.Second)), "the graded attempt is the one after the pause")
}

func TestPauseRefusedBeforeEnergising(t *testing.T) {
	g := newRig(t)
	r, err := New(g.config())
	require.NoError(t, err)
	assert.ErrorContains(t, r.Pause("Ana"), "nothing is energised yet")
	assert.ErrorContains(t, r.Unpause("Ana"), "not paused")
}
