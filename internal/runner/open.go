package runner

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/version"
)

// Files the runner adds to the bundle.
const (
	PlanFile    = evidence.PlanFile
	BindingFile = evidence.BindingFile
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
		r.res.Cases = append(r.res.Cases, caseResult(c))
	}
	r.res.Run.Instruments = r.instruments()
	if cfg.Retry {
		return r.openRetry(digest)
	}
	var err error
	opt := evidence.Options{Signer: cfg.Signer, By: cfg.Operator.Who(), TimeStamp: cfg.TimeStamp}
	written := map[string]bool{} // the files a resumed bundle already holds
	if cfg.Resume {
		written, err = r.resume(digest, opt)
	} else {
		r.b, err = evidence.Create(cfg.Dir, r.clk, opt)
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
	if !written[PlanFile] {
		if err := r.b.WriteFile(PlanFile, cfg.PlanBytes); err != nil {
			return err
		}
	}
	if len(cfg.Site.BindingText) > 0 && !written[BindingFile] {
		if err := r.b.WriteFile(BindingFile, cfg.Site.BindingText); err != nil {
			return err
		}
	}
	r.log.Info("run started", "plan_digest", digest, "cases", len(p.Cases), "site", cfg.Site.Kind,
		"time_scale", cfg.Site.TimeScale, "resumed", cfg.Resume, "bundle", cfg.Dir, "signed", r.b.Signed())
	return r.b.Seal()
}

// resume reopens the bundle, once it verifies, and takes back the
// completed cases' results. It returns the files the bundle already
// holds (a bundle stopped in its first moments may not hold the plan).
func (r *Runner) resume(digest string, opt evidence.Options) (map[string]bool, error) {
	written := map[string]bool{}
	accept := func(st *evidence.State) error {
		if d, ok := st.Report.FileDigest(PlanFile); ok {
			written[PlanFile] = true
			if d != digest {
				return fmt.Errorf("it ran plan %s, not this plan (%s): resume with the same plan", d, digest)
			}
		}
		if d, ok := st.Report.FileDigest(BindingFile); ok {
			written[BindingFile] = true
			if r.cfg.Site.Kind == Bound && d != r.cfg.Site.BindingDigest {
				return fmt.Errorf("it started with binding %s, this one is %s", short(d), short(r.cfg.Site.BindingDigest))
			}
		}
		if st.RunStart != nil {
			var first runStart
			if err := json.Unmarshal(st.RunStart, &first); err != nil {
				return fmt.Errorf("its run_start record: %w", err)
			}
			if err := r.sameSite(first); err != nil {
				return err
			}
			if !first.Resumed {
				r.res.Run.Started = st.Started
			}
		}
		for _, ce := range st.Ends {
			if _, ok := r.index[ce.Result.ID]; !ok {
				return fmt.Errorf("it completed case %s, which the plan does not have", ce.Result.ID)
			}
		}
		return nil
	}
	b, st, err := evidence.Resume(r.cfg.Dir, r.clk, opt, accept)
	if err != nil {
		return nil, err
	}
	r.b = b
	r.res.Run.Resumes = st.Resumes + 1
	for _, ce := range st.Ends {
		i := r.index[ce.Result.ID]
		r.res.Cases[i] = ce.Result
		r.outcomes[ce.Result.ID] = ce.Result.Outcome
		r.attempts[ce.Result.ID] = max(ce.Attempt, 1)
	}
	return written, nil
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
