// Package results is the results format of a sat run: results.json in
// the evidence bundle. It holds one entry per case of the plan with its
// outcome and, per check, the graded verdict (measured value, limit,
// margin, the deciding sample) with the contract sources it grades.
// Go types, an embedded JSON Schema (draft 2020-12), and strict reading
// and writing: Encode validates what it writes, Decode validates what it
// reads. Reports import this package; they re-grade verdicts from the
// raw samples with internal/grade.
package results

import (
	"time"

	"github.com/seamdc/seam/internal/grade"
)

// Format is the results format version; readers refuse any other.
const Format = "seam.results/v1"

// Run outcomes, worst first: an aborted run is not complete; a failed
// one proved a product failure; an error run could not test something.
const (
	Aborted = "aborted"
	Failed  = "failed"
	Errored = "error"
	Passed  = "passed"
)

// Results is results.json.
type Results struct {
	Format  string  `json:"format"`
	Tool    Tool    `json:"tool"`
	Plan    PlanRef `json:"plan"`
	Run     Run     `json:"run"`
	Outcome string  `json:"outcome"`
	Counts  Counts  `json:"counts"`
	Abort   *Abort  `json:"abort,omitempty"`
	Cases   []Case  `json:"cases"`
}

// Tool is the program that ran the plan.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// PlanRef identifies the plan that ran.
type PlanRef struct {
	Digest    string  `json:"digest"` // sha256 of plan.json as read
	Site      string  `json:"site"`
	Level     string  `json:"level"`
	Module    string  `json:"module,omitempty"`
	Contracts string  `json:"contracts"`  // the contracts digest the plan was compiled from
	MaxHoldS  float64 `json:"max_hold_s"` // the compile option that shortens holds (0: none)
	Compiler  Tool    `json:"compiler"`
}

// Run says how and where the plan ran.
type Run struct {
	Started time.Time  `json:"started"`
	Ended   *time.Time `json:"ended,omitempty"`
	// Site is "simulated" or "binding".
	Site string `json:"site"`
	// Binding is the digest of the site binding without secrets.
	Binding string `json:"binding,omitempty"`
	// Defect is the simulator's defect configuration, if any.
	Defect string `json:"defect,omitempty"`
	// TimeScale is site seconds per wall second: 1 on a real site; a
	// simulated site may run faster, and the evidence says so here. In
	// lockstep it is the most the run was allowed (0: no limit).
	TimeScale float64 `json:"time_scale"`
	// Lockstep is set when site time moved with the run's goroutines
	// (a simulator in process): waits on devices took no site time, and
	// the verdicts do not depend on how busy the machine was.
	Lockstep bool `json:"lockstep,omitempty"`
	// Shortened says, in words, what was shortened and by what.
	Shortened string `json:"shortened,omitempty"`
	Operator  string `json:"operator"`
	// Resumes counts how often the run was resumed after a stop.
	Resumes int `json:"resumes"`
	// Instruments are the instruments the binding names behind its
	// devices, with their calibration as it stood when the run started.
	Instruments []Instrument `json:"instruments,omitempty"`
}

// Instrument is a device's instrument: who made it, its serial, when it
// was calibrated and is due, and whether it was overdue at the run.
type Instrument struct {
	Device      string `json:"device"`
	Make        string `json:"make,omitempty"`
	Model       string `json:"model,omitempty"`
	Serial      string `json:"serial"`
	Calibrated  string `json:"calibrated"`
	Due         string `json:"due,omitempty"`
	Certificate string `json:"certificate,omitempty"`
	Overdue     bool   `json:"overdue,omitempty"`
}

// Counts are the cases by outcome.
type Counts struct {
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Error   int `json:"error"`
	Aborted int `json:"aborted"`
	Skipped int `json:"skipped"`
}

// Abort says why and when a run stopped early.
type Abort struct {
	At     time.Time `json:"at"`
	Case   string    `json:"case,omitempty"`
	Cause  string    `json:"cause"` // interlock, interrupt, manual_step, fatal, handover
	Reason string    `json:"reason"`
	// Interlock details, for an interlock trip.
	Interlock string   `json:"interlock,omitempty"`
	Channel   string   `json:"channel,omitempty"`
	Value     *float64 `json:"value,omitempty"`
	// ZeroedIn is how long the load banks took from the trip to a
	// read-back of 0 kW, in seconds.
	ZeroedIn *float64 `json:"zeroed_in_s,omitempty"`
}

// Abort causes.
const (
	CauseInterlock  = "interlock"
	CauseInterrupt  = "interrupt"
	CauseManualStep = "manual_step"
	CauseFatal      = "fatal"
	// CauseHandover is no abort: the session stopped where it was told
	// to (sat run --until, or --case and --from leaving cases not run),
	// load zeroed, the bundle left for the next shift to resume.
	CauseHandover = "handover"
)

// Case is one case's result.
type Case struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Level    string        `json:"level"`
	Kind     string        `json:"kind"`
	Boundary string        `json:"boundary"`
	Module   string        `json:"module"`
	Clause   Clause        `json:"clause"`
	Outcome  grade.Outcome `json:"outcome"`
	// Reason explains an ERROR, ABORTED or SKIPPED outcome.
	Reason   string         `json:"reason,omitempty"`
	Started  *time.Time     `json:"started,omitempty"`
	Ended    *time.Time     `json:"ended,omitempty"`
	Checks   []Check        `json:"checks"`
	Operator []Confirmation `json:"operator,omitempty"`
	// Ambient are the binding's ambient channels as read at the case's
	// start.
	Ambient []Ambient `json:"ambient,omitempty"`
}

// Ambient is one reading of an ambient channel: its value in its unit,
// or why there is none.
type Ambient struct {
	Channel string   `json:"channel"`
	Value   *float64 `json:"value,omitempty"`
	Unit    string   `json:"unit,omitempty"`
	Problem string   `json:"problem,omitempty"`
}

// Clause is the contract clause a case proves.
type Clause struct {
	Path           string `json:"path"`
	Pos            string `json:"pos"`
	BoundaryDigest string `json:"boundary_digest"`
}

// Check is a graded check with what it grades.
type Check struct {
	grade.Verdict
	Side    string   `json:"side"`
	Channel string   `json:"channel"`
	Sources []Source `json:"sources"`
}

// Source is a contract value a check grades against.
type Source struct {
	Path  string `json:"path"`
	Pos   string `json:"pos"`
	Value string `json:"value"`
}

// Confirmation is a manual step or precondition and who confirmed it.
type Confirmation struct {
	Step     string    `json:"step"` // a step id, or "precondition N"
	Action   string    `json:"action"`
	Expect   string    `json:"expect,omitempty"`
	By       string    `json:"by"` // the operator, or "simulator"
	Prompted time.Time `json:"prompted"`
	At       time.Time `json:"at"`
	Answer   string    `json:"answer"` // "yes", or what the operator typed
}

// Summarize sets Counts and Outcome from the cases and the abort.
func (r *Results) Summarize() {
	r.Counts = Counts{}
	for _, c := range r.Cases {
		switch c.Outcome {
		case grade.Pass:
			r.Counts.Pass++
		case grade.Fail:
			r.Counts.Fail++
		case grade.Error:
			r.Counts.Error++
		case grade.Aborted:
			r.Counts.Aborted++
		case grade.Skipped:
			r.Counts.Skipped++
		}
	}
	switch {
	case r.Abort != nil:
		r.Outcome = Aborted
	case r.Counts.Fail > 0:
		r.Outcome = Failed
	case r.Counts.Error > 0 || r.Counts.Skipped > 0 || r.Counts.Aborted > 0:
		r.Outcome = Errored
	default:
		r.Outcome = Passed
	}
}

// Case returns the case called id, or nil.
func (r *Results) Case(id string) *Case {
	for i := range r.Cases {
		if r.Cases[i].ID == id {
			return &r.Cases[i]
		}
	}
	return nil
}
