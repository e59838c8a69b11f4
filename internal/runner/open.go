package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/version"
)

// Files the runner adds to the bundle.
const (
	PlanFile    = "plan.json"
	BindingFile = "binding.cue"
)

// runStart is the data of a run_start record.
type runStart struct {
	PlanDigest string  `json:"plan_digest"`
	Tool       string  `json:"tool"`
	Site       string  `json:"site"`
	Binding    string  `json:"binding,omitempty"`
	Defect     string  `json:"defect,omitempty"`
	TimeScale  float64 `json:"time_scale"`
	Lockstep   bool    `json:"lockstep,omitempty"`
	Shortened  string  `json:"shortened,omitempty"`
	Operator   string  `json:"operator"`
	Resumed    bool    `json:"resumed,omitempty"`
	Cases      int     `json:"cases"`
}

// caseEnd is the data of a case_end record: the case's result and what
// grading it needs, so that a report or a resumed run can rebuild it.
type caseEnd struct {
	Result   results.Case    `json:"result"`
	Timeline *grade.Timeline `json:"timeline,omitempty"`
	// Samples is the byte range of samples.csv the case wrote.
	Samples [2]int64 `json:"samples"`
}

// open creates the bundle (or resumes it), starts the run log and
// writes run_start.
func (r *Runner) open() error {
	cfg := r.cfg
	p := cfg.Plan
	digest := Digest(cfg.PlanBytes)
	r.res = &results.Results{Format: results.Format, Tool: results.Tool{Name: "sat", Version: version.Version},
		Plan: results.PlanRef{Digest: digest, Site: p.Header.Site, Level: p.Header.Level, Module: p.Header.Module,
			Contracts: p.Header.Inputs.Contracts, MaxHoldS: p.Header.Options.MaxHoldS,
			Compiler: results.Tool{Name: p.Header.Tool.Name, Version: p.Header.Tool.Version}},
		Run: results.Run{Started: r.clk.Now().UTC(), Site: cfg.Site.Kind, Binding: cfg.Site.BindingDigest, Defect: cfg.Site.Defect,
			TimeScale: cfg.Site.TimeScale, Lockstep: cfg.Site.Lockstep, Shortened: cfg.Shortened, Operator: cfg.Operator.Who()}}
	for i, c := range p.Cases {
		r.index[c.ID] = i
		r.res.Cases = append(r.res.Cases, results.Case{ID: c.ID, Title: c.Title, Level: c.Level, Kind: c.Kind,
			Boundary: c.Boundary, Module: c.Module, Checks: []results.Check{},
			Clause: results.Clause{Path: c.Clause.Path, Pos: c.Clause.Pos, BoundaryDigest: c.Clause.BoundaryDigest}})
	}
	var err error
	if cfg.Resume {
		err = r.resume(digest)
	} else {
		r.b, err = evidence.Create(cfg.Dir, r.clk)
	}
	if err != nil {
		return err
	}
	if err := r.openLog(); err != nil {
		return err
	}
	r.append("run_start", "", runStart{PlanDigest: digest, Tool: "sat " + version.Version, Site: cfg.Site.Kind,
		Binding: cfg.Site.BindingDigest, Defect: cfg.Site.Defect, TimeScale: cfg.Site.TimeScale, Lockstep: cfg.Site.Lockstep, Shortened: cfg.Shortened,
		Operator: cfg.Operator.Who(), Resumed: cfg.Resume, Cases: len(p.Cases)})
	if !cfg.Resume {
		if err := r.b.WriteFile(PlanFile, cfg.PlanBytes); err != nil {
			return err
		}
		if len(cfg.Site.BindingText) > 0 {
			if err := r.b.WriteFile(BindingFile, cfg.Site.BindingText); err != nil {
				return err
			}
		}
	}
	r.log.Info("run started", "plan_digest", digest, "cases", len(p.Cases), "site", cfg.Site.Kind,
		"time_scale", cfg.Site.TimeScale, "resumed", cfg.Resume, "bundle", cfg.Dir)
	return r.b.Sync()
}

// resume reopens the bundle and takes back the completed cases' results.
func (r *Runner) resume(digest string) error {
	old, err := os.ReadFile(filepath.Join(r.cfg.Dir, PlanFile))
	if err != nil {
		return fmt.Errorf("cannot resume %s: %w", r.cfg.Dir, err)
	}
	if got := Digest(old); got != digest {
		return fmt.Errorf("cannot resume %s: it ran plan %s, not this plan (%s): resume with the same plan", r.cfg.Dir, got, digest)
	}
	if first, err := firstRunStart(r.cfg.Dir); err != nil {
		return fmt.Errorf("cannot resume %s: %w", r.cfg.Dir, err)
	} else if err := r.sameSite(first); err != nil {
		return fmt.Errorf("cannot resume %s: %w", r.cfg.Dir, err)
	}
	b, st, err := evidence.Resume(r.cfg.Dir, r.clk)
	if err != nil {
		return err
	}
	r.b = b
	r.res.Run.Resumes = 1
	for _, rec := range st.Records {
		switch rec.Kind {
		case evidence.KindResume:
			r.res.Run.Resumes++
		case "run_start":
			var rs runStart
			if json.Unmarshal(rec.Data, &rs) == nil && !rs.Resumed {
				r.res.Run.Started = rec.Time
			}
		case "case_end":
			var ce caseEnd
			dec := json.NewDecoder(bytes.NewReader(rec.Data))
			if err := dec.Decode(&ce); err != nil {
				return fmt.Errorf("cannot resume %s: case_end of %s (record %d): %w", r.cfg.Dir, rec.Case, rec.Seq, err)
			}
			i, ok := r.index[rec.Case]
			if !ok {
				return fmt.Errorf("cannot resume %s: it completed case %s, which the plan does not have", r.cfg.Dir, rec.Case)
			}
			r.res.Cases[i] = ce.Result
			r.outcomes[rec.Case] = ce.Result.Outcome
		}
	}
	return nil
}

// firstRunStart reads the run_start record the bundle began with.
func firstRunStart(dir string) (runStart, error) {
	f, err := os.Open(filepath.Join(dir, evidence.JournalFile))
	if err != nil {
		return runStart{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec evidence.Record
		var rs runStart
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Kind == "run_start" && json.Unmarshal(rec.Data, &rs) == nil {
			return rs, nil
		}
	}
	return runStart{}, fmt.Errorf("%s has no run_start record", evidence.JournalFile)
}

// sameSite refuses to resume a run on another site than it started on:
// a simulated run against a real site, another defect, another binding.
func (r *Runner) sameSite(first runStart) error {
	site := r.cfg.Site
	switch {
	case first.Site != site.Kind:
		return fmt.Errorf("it started on a %s site, this is a %s one", first.Site, site.Kind)
	case first.Defect != site.Defect:
		return fmt.Errorf("it started with defect %q, this run has %q", first.Defect, site.Defect)
	case site.Kind == Bound && first.Binding != site.BindingDigest:
		return fmt.Errorf("it started with binding %s, this one is %s", short(first.Binding), short(site.BindingDigest))
	}
	return nil
}

// openLog starts run.log, a JSON log in the bundle, beside cfg.Log.
func (r *Runner) openLog() error {
	f, err := os.OpenFile(filepath.Join(r.cfg.Dir, evidence.LogFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	lf := &logFile{f: f}
	r.logF = lf
	h := slog.NewJSONHandler(lf, &slog.HandlerOptions{Level: slog.LevelDebug})
	r.log = slog.New(slog.NewMultiHandler(h, r.cfg.Log.Handler()))
	return nil
}

// closeLog closes run.log; later log lines go to cfg.Log only (the
// manifest has the file's digest by then).
func (r *Runner) closeLog() {
	if r.logF != nil {
		r.logF.Close()
	}
}

// logFile is run.log: writes after Close are dropped.
type logFile struct {
	mu sync.Mutex
	f  *os.File
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return len(p), nil
	}
	return l.f.Write(p)
}

func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
