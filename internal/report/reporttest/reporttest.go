// Package reporttest writes real evidence bundles for the report's
// tests and benchmarks: a plan's cases run against a small deterministic
// model of a healthy (or defective) site on a fake clock, the samples
// and journal written with internal/evidence, every check graded with
// internal/grade as the runner grades it, and the bundle finished with a
// manifest. It needs no devices, no simulator and no wall time.
package reporttest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/version"
)

// Defects the model can show.
const (
	Dip       = "dip"        // the first edge of a square wave dips the response past the envelope
	LateAlarm = "late-alarm" // alarms come 30 s after the event
	// RestoreSpike overshoots every channel at a fault's restore, to
	// three times its band's half width above its level, decaying in
	// 0.4 s: a feed coming back.
	RestoreSpike = "restore-spike"
)

// Options shape the run.
type Options struct {
	Start  time.Time     // site time of the first sample (default 2026-11-29 12:00 UTC)
	Period time.Duration // sample period of every channel (default 100 ms)
	// Scale multiplies the response to load edges and events: 1 is the
	// healthy site; a module damaged in transport responds larger.
	Scale  float64
	Defect string
	Signer ssh.Signer
	// Unfinished leaves the bundle as an aborted run does: results
	// written, no run_end and no manifest.
	Unfinished bool
	// Noise adds this many extra channels sampled with every case, to
	// grow the samples for benchmarks.
	Noise int
}

// Write runs every case of p (encoded as raw) into a new bundle in dir
// and returns the results it recorded.
func Write(dir string, p *plan.Plan, raw []byte, opt Options) (*results.Results, error) {
	opt = defaults(opt)
	clk := clock.NewFake(opt.Start)
	var eo evidence.Options
	if opt.Signer != nil {
		eo = evidence.Options{Signer: evidence.SSHSigner(opt.Signer), By: "simulator"}
	}
	b, err := evidence.Create(dir, clk, eo)
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256(raw)
	res := &results.Results{Format: results.Format, Tool: results.Tool{Name: "sat", Version: version.Version},
		Plan: results.PlanRef{Digest: "sha256:" + hex.EncodeToString(digest[:]), Site: p.Header.Site, Level: p.Header.Level,
			Module: p.Header.Module, Contracts: p.Header.Inputs.Contracts, MaxHoldS: p.Header.Options.MaxHoldS,
			Compiler: results.Tool{Name: p.Header.Tool.Name, Version: p.Header.Tool.Version}},
		Run: results.Run{Started: opt.Start, Site: "simulated", TimeScale: 1, Operator: "simulator", Defect: opt.Defect},
	}
	if _, err := b.Append("run_start", "", map[string]string{"plan": res.Plan.Digest}); err != nil {
		return nil, err
	}
	m := newModel(p, opt)
	for i := range p.Cases {
		rc, err := runCase(b, clk, m, p, &p.Cases[i], opt)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", p.Cases[i].ID, err)
		}
		res.Cases = append(res.Cases, rc)
		clk.Advance(2 * time.Second) // between cases
	}
	ended := clk.Now()
	res.Run.Ended = &ended
	res.Summarize()
	if err := finish(b, res, raw, opt.Unfinished); err != nil {
		return nil, err
	}
	return res, nil
}

func defaults(opt Options) Options {
	if opt.Start.IsZero() {
		opt.Start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	}
	if opt.Period <= 0 {
		opt.Period = 100 * time.Millisecond
	}
	if opt.Scale == 0 {
		opt.Scale = 1
	}
	return opt
}

func finish(b *evidence.Bundle, res *results.Results, raw []byte, unfinished bool) error {
	if err := b.WriteFile("plan.json", raw); err != nil {
		return err
	}
	enc, err := results.Encode(res)
	if err != nil {
		return err
	}
	if err := b.WriteFile(evidence.ResultsFile, enc); err != nil {
		return err
	}
	if unfinished {
		return b.Close()
	}
	_, err = b.Finish(evidence.Meta{ToolVersion: version.Version, PlanDigest: res.Plan.Digest,
		ContractsDigest: res.Plan.Contracts, Outcome: res.Outcome})
	return err
}

// runCase lays out the case's steps in time, samples its channels
// through the model, grades its checks and journals it all.
func runCase(b *evidence.Bundle, clk *clock.Fake, m *model, p *plan.Plan, c *plan.Case, opt Options) (results.Case, error) {
	start := clk.Now()
	if _, err := b.Append("case_start", c.ID, nil); err != nil {
		return results.Case{}, err
	}
	from, err := samplesSize(b)
	if err != nil {
		return results.Case{}, err
	}
	tl, ev := m.schedule(c, start)
	channels := caseChannels(c, opt.Noise)
	graders := make([]*grade.Grader, len(c.Checks))
	for i, k := range c.Checks {
		graders[i] = grade.New(k, tl, grade.Options{})
	}
	period := opt.Period
	if c.Kind == plan.Grid { // the POI meter as fast as the plan asks
		for _, s := range c.Sampling {
			if p := dur(s.MaxPeriodS); p > 0 && p < period {
				period = p
			}
		}
	}
	for t := start; !t.After(tl.End); t = t.Add(period) {
		clk.Advance(t.Sub(clk.Now()))
		var batch []evidence.Sample
		for j, ch := range channels {
			s := evidence.Sample{Channel: ch, Time: t, Value: m.value(ch, t, tl, ev), Quality: "good"}
			if j == len(channels)-1 && opt.Noise == 0 && isExcitation(c, ch) && t.Sub(start)%(97*period) == 0 && t != start {
				s.Quality = "stale" // now and then a stale excitation reading: drawn as missing, never graded
			}
			batch = append(batch, s)
			for i, k := range c.Checks {
				if k.Channel == ch {
					graders[i].Add(grade.Sample{Time: t, Value: s.Value, Good: s.Quality == "good"})
				}
			}
		}
		if err := b.Sample(batch...); err != nil {
			return results.Case{}, err
		}
	}
	clk.Advance(tl.End.Sub(clk.Now()))
	for _, sp := range tl.Steps {
		if _, err := b.Append("step", c.ID, sp); err != nil {
			return results.Case{}, err
		}
	}
	rc := resultOf(p, c, tl, graders)
	to, err := samplesSize(b)
	if err != nil {
		return results.Case{}, err
	}
	// as internal/runner writes it: the result, the grading timeline and
	// the bytes of samples.csv the case wrote
	if _, err := b.Append(evidence.KindCaseEnd, c.ID, evidence.CaseEnd{Result: rc, Timeline: &tl, Samples: [2]int64{from, to}}); err != nil {
		return results.Case{}, err
	}
	return rc, b.Seal()
}

// samplesSize syncs the bundle and returns the length of samples.csv.
func samplesSize(b *evidence.Bundle) (int64, error) {
	if err := b.Sync(); err != nil {
		return 0, err
	}
	st, err := os.Stat(filepath.Join(b.Dir(), evidence.SamplesFile))
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func isExcitation(c *plan.Case, ch string) bool {
	for _, k := range c.Checks {
		if k.Channel == ch {
			return false
		}
	}
	return true
}

// caseChannels are the channels the case samples, sorted, excitation
// (ungraded) channels last, then noise.
func caseChannels(c *plan.Case, noise int) []string {
	var graded, other []string
	for _, s := range c.Sampling {
		if isExcitation(c, s.Channel) {
			other = append(other, s.Channel)
		} else {
			graded = append(graded, s.Channel)
		}
	}
	slices.Sort(graded)
	slices.Sort(other)
	out := append(graded, other...)
	for i := range noise {
		out = append(out, fmt.Sprintf("bench/noise-%03d", i))
	}
	return out
}

func resultOf(p *plan.Plan, c *plan.Case, tl grade.Timeline, graders []*grade.Grader) results.Case {
	start, end := tl.Start, tl.End
	rc := results.Case{ID: c.ID, Title: c.Title, Level: c.Level, Kind: c.Kind, Boundary: c.Boundary, Module: c.Module,
		Clause:  results.Clause{Path: c.Clause.Path, Pos: c.Clause.Pos, BoundaryDigest: c.Clause.BoundaryDigest},
		Outcome: grade.Pass, Started: &start, Ended: &end, Checks: []results.Check{}}
	for i, k := range c.Checks {
		v := graders[i].Verdict()
		rc.Checks = append(rc.Checks, results.Check{Verdict: v, Side: k.Side, Channel: k.Channel, Sources: sources(p, k)})
		switch {
		case v.Outcome == grade.Fail:
			rc.Outcome = grade.Fail
		case v.Outcome == grade.Error && rc.Outcome == grade.Pass:
			rc.Outcome = grade.Error
		}
	}
	if rc.Outcome == grade.Error { // as the runner says it: each check that could not grade
		var why []string
		for _, k := range rc.Checks {
			if k.Verdict.Outcome == grade.Error {
				why = append(why, k.Verdict.Check+": "+k.Verdict.Detail)
			}
		}
		rc.Reason = strings.Join(why, "\n")
	}
	for _, sp := range tl.Steps {
		if st := stepOf(c, sp.Step); st != nil && (st.Op == plan.OpOperator || st.Action != "") {
			rc.Operator = append(rc.Operator, results.Confirmation{Step: st.ID, Action: st.Action, Expect: st.Expect,
				By: "simulator", Prompted: sp.Start, At: sp.Start.Add(200 * time.Millisecond), Answer: "yes"})
		}
	}
	return rc
}

func sources(p *plan.Plan, k plan.Check) []results.Source {
	out := []results.Source{}
	for _, s := range k.Sources {
		src := p.Sources[s]
		out = append(out, results.Source{Path: s, Pos: src.Pos, Value: src.Value})
	}
	return out
}

func stepOf(c *plan.Case, id string) *plan.Step {
	for i := range c.Steps {
		if c.Steps[i].ID == id {
			return &c.Steps[i]
		}
	}
	return nil
}

func expDecay(t, tau float64) float64 {
	if t < 0 {
		return 0
	}
	return math.Exp(-t / tau)
}
