package fwrollout

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/redfish/bmc"
	"github.com/seamdc/seam/internal/scheduler"
)

var trays = []string{"ma/r01/compute-01", "ma/r01/compute-02", "ma/r02/compute-01", "ma/r02/compute-02"}

// holders are the owners holding each node now.
func (s *site) holders() map[string][]hold.Owner {
	out := map[string][]hold.Owner{}
	for o, h := range s.book.Holds {
		for _, n := range h.Nodes {
			out[n] = append(out[n], o)
		}
	}
	for _, os := range out {
		slices.Sort(os)
	}
	return out
}

func TestRolloutStageByStage(t *testing.T) {
	s := newSite(t, trays, bmc.Config{})
	// a job on a stage-2 node ends 20 minutes into the rollout
	s.sched.SetJobs([]scheduler.Job{{ID: "77", Nodes: []string{nodeName(trays[2])}}})
	s.clk.Go(func() {
		_ = s.clk.Sleep(context.Background(), 20*time.Minute)
		s.sched.SetJobs(nil)
	})
	// the ledger at every stage: only the stage's nodes held by the
	// stage's owner, the others by burn-in once updated
	var seen []string
	dir := filepath.Join(t.TempDir(), "ev")
	b := s.bundle(dir)
	cfg := s.config(bundleJournal{b}, nil)
	cfg.Progress = func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if strings.Contains(msg, "holds") {
			h := s.holders()
			seen = append(seen, msg)
			for n, os := range h {
				for _, o := range os {
					if o.Kind() == hold.Firmware {
						st := strings.TrimPrefix(string(o), "firmware:fw-test-s")
						require.Contains(t, msg, "stage "+strings.TrimLeft(st, "0"), "node %s held by %s during another stage", n, o)
					}
				}
			}
		}
	}
	res, err := s.run(cfg, context.Background())
	require.NoError(t, err)
	finish(t, b)
	require.Len(t, res.Stages, 2)
	require.Len(t, seen, 2)
	for _, key := range trays {
		require.Equal(t, map[string]int{"bmc": 1, "bios": 1}, s.updates(key), key)
		require.Equal(t, []hold.Owner{BurninOwner(s.plan)}, s.holders()[nodeName(key)], "%s waits for its burn-in", key)
	}
	for _, n := range s.sched.Drains() {
		require.NotEmpty(t, n)
	}
	// the journal verifies, and says the rollout ended
	rep, err := evidence.Verify(dir, []ssh.PublicKey{s.key.PublicKey()})
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	st, err := ReadState(dir)
	require.NoError(t, err)
	require.Equal(t, map[int]bool{1: true, 2: true}, st.StagesDone)
	require.Len(t, st.Trays, 4)
	require.Empty(t, st.Updates)
}

// TestRolloutWaitsForJobsUpToTheDeadline: a job that outlasts the
// deadline stops the stage before any update, its nodes still held.
func TestRolloutWaitsForJobsUpToTheDeadline(t *testing.T) {
	s := newSite(t, trays[:2], bmc.Config{})
	s.sched.SetJobs([]scheduler.Job{{ID: "42", Nodes: []string{nodeName(trays[0])}}})
	b := s.bundle(filepath.Join(t.TempDir(), "ev"))
	cfg := s.config(bundleJournal{b}, nil)
	cfg.JobsDeadline = 2 * time.Hour
	t0 := s.clk.Now()
	_, err := s.run(cfg, context.Background())
	require.ErrorContains(t, err, "stage 1: 1 job(s) still run on its drained nodes after 2h0m0s: 42@"+nodeName(trays[0]))
	require.ErrorContains(t, err, "nothing was updated")
	require.Equal(t, 2*time.Hour, s.clk.Now().Sub(t0).Truncate(time.Minute))
	require.Empty(t, s.bmcs[trays[0]].Updates())
	require.Equal(t, []hold.Owner{"firmware:fw-test-s01"}, s.holders()[nodeName(trays[0])])
	require.Empty(t, s.sched.Signals(), "jobs are never killed")
}

// TestRolloutStopsAfterAFailedStage: a BMC whose update fails stops the
// rollout after its stage, naming the node, component and step.
func TestRolloutStopsAfterAFailedStage(t *testing.T) {
	s := newSite(t, trays, bmc.Config{})
	require.NoError(t, s.bmcs[trays[1]].SetFault(bmc.FaultUpdateFails, true))
	b := s.bundle(filepath.Join(t.TempDir(), "ev"))
	res, err := s.run(s.config(bundleJournal{b}, nil), context.Background())
	require.Error(t, err)
	require.Len(t, res.Stages, 1, "stage 2 never starts")
	require.Equal(t, []string{trays[1]}, res.Stages[0].Failed)
	require.ErrorContains(t, err, "stage 1: 1 of 2 tray(s) failed")
	require.ErrorContains(t, err, trays[1]+" (bmc-"+trays[1]+"): bmc 25.09-2, step task")
	require.Equal(t, []hold.Owner{"firmware:fw-test-s01"}, s.holders()[nodeName(trays[1])], "the failed node stays held")
	require.Equal(t, []hold.Owner{BurninOwner(s.plan)}, s.holders()[nodeName(trays[0])])
	require.Empty(t, s.bmcs[trays[2]].Updates())
}

// TestRolloutResumesAfterAStopAnywhere stops the rollout as a kill
// would at each of its journal's records in turn (the record and
// everything after lost), resumes it from the bundle, and checks that
// it finishes with every update sent exactly once.
func TestRolloutResumesAfterAStopAnywhere(t *testing.T) {
	// a whole run, to count its records
	s := newSite(t, trays[:2], bmc.Config{})
	const many = 1 << 30
	whole := &dying{bundleJournal: bundleJournal{s.bundle(filepath.Join(t.TempDir(), "ev"))}, n: many, cancel: func() {}}
	_, err := s.run(s.config(whole, nil), context.Background())
	require.NoError(t, err)
	total := many - whole.n
	require.Greater(t, total, 20)

	t.Logf("%d records: stopped at every third", total)
	for n := 1; n < total; n += 3 {
		s := newSite(t, trays[:2], bmc.Config{})
		dir := filepath.Join(t.TempDir(), "ev")
		ctx, cancel := context.WithCancel(context.Background())
		d := &dying{bundleJournal: bundleJournal{s.bundle(dir)}, n: n, cancel: cancel}
		_, err := s.run(s.config(d, nil), ctx)
		require.Error(t, err, "stopped at record %d", n)
		// resumed as sat firmware apply --resume does
		b, _, err := evidence.Resume(dir, s.clk, evidence.Options{Signer: evidence.SSHSigner(s.key), By: "test"}, nil)
		require.NoError(t, err, "stopped at record %d", n)
		st, err := ReadState(dir)
		require.NoError(t, err)
		_, err = s.run(s.config(bundleJournal{b}, st), context.Background())
		require.NoError(t, err, "stopped at record %d", n)
		finish(t, b)
		for _, key := range trays[:2] {
			require.Equal(t, map[string]int{"bmc": 1, "bios": 1}, s.updates(key), "stopped at record %d: %s", n, key)
			require.Equal(t, []hold.Owner{BurninOwner(s.plan)}, s.holders()[nodeName(key)], "stopped at record %d", n)
		}
		rep, err := evidence.Verify(dir, []ssh.PublicKey{s.key.PublicKey()})
		require.NoError(t, err)
		require.Empty(t, rep.Problems, "stopped at record %d", n)
	}
}

func finish(t *testing.T, b *evidence.Bundle) {
	t.Helper()
	_, err := b.Finish(evidence.Meta{ToolVersion: "test", PlanDigest: "sha256:test", Outcome: "passed"})
	require.NoError(t, err)
}

// With Push, each image goes to the BMC in a multipart push of its file
// (checked against its digest first): the image server serves nothing.
func TestRolloutPushesImages(t *testing.T) {
	s := newSite(t, trays[:2], bmc.Config{})
	b := s.bundle(filepath.Join(t.TempDir(), "ev"))
	cfg := s.config(bundleJournal{b}, nil)
	cfg.Update.Push, cfg.ImageFiles = true, s.files
	res, err := s.run(cfg, context.Background())
	require.NoError(t, err)
	finish(t, b)
	for _, key := range trays[:2] {
		require.Equal(t, map[string]int{"bmc": 1, "bios": 1}, s.updates(key), key)
	}
	require.Empty(t, s.images.Fetches(), "pushed, not fetched")
	require.Len(t, res.Stages, 1)
	for _, tr := range res.Stages[0].Trays {
		for _, r := range tr.Results {
			require.True(t, r.Sent, "%s %s", tr.Tray, r.Component)
		}
	}
}
