// Package plan is the test plan format shared by contractc, which writes
// plans, and sat, which runs them: Go types, an embedded JSON Schema
// (draft 2020-12), and strict reading and writing.
//
// A plan is device-agnostic: it names logical channels and load banks,
// never addresses. Loads are in kW per load bank, times in seconds, and
// every limit is in the canonical unit of its channel (internal/units)
// with the unit written beside it. The same plan value always encodes
// to the same bytes: object keys sorted, two-space indentation, no
// timestamps. docs/plan-format.md describes the format for people.
package plan

// Format is the plan format version; a reader refuses any other.
const Format = "seam.plan/v1"

// Generated marks a plan as tool output.
const Generated = "contractc compile; do not edit"

// Levels, in the order they run on a project.
const (
	FAT = "fat" // factory acceptance: a module against its own side
	SAT = "sat" // site acceptance: every joint with both sides connected
	IST = "ist" // integrated systems test: failure behaviour under load
	All = "all" // FAT, SAT and IST in one plan
)

// Clause kinds, in the order cases run within a level.
const (
	Steady    = "steady"
	Transient = "transient"
	Failure   = "failure"
	Grid      = "grid" // the utility's requirements at the point of interconnection
)

// Sides of a clause: what the supplier guarantees, what the consumer requires.
const (
	Guarantee = "guarantee"
	Require   = "require"
)

// Step operations; Fields lists what each uses.
const (
	OpSetLoad     = "set_load"     // load_bank, kw: jump to a setpoint
	OpRamp        = "ramp"         // load_bank, from_kw, kw, rate_kw_per_s
	OpSquareWave  = "square_wave"  // load_bank, low_kw, high_kw, period_s, duty_pct, rate_kw_per_s, cycles
	OpHold        = "hold"         // duration_s: keep everything as it is
	OpInjectFault = "inject_fault" // event, target: a device performs it; action/expect are the manual fallback
	OpAwaitAlarm  = "await_alarm"  // channel, timeout_s: wait until the alarm is raised
	OpRestore     = "restore"      // event, target: undo an injected fault; action/expect as fallback
	OpOperator    = "operator"     // action, expect (event, target when it injects or restores a fault)
	// OpTrain runs the training pattern in phase across the site for
	// duration_s: compute for duty_pct of each period_s, communication
	// for the rest, with a checkpoint's stall of stall_s at stall_at_s.
	// The driver says what draws it: the fleet's GPUs (the module-wide
	// step sat burnin runs), or every IT module's load bank switched
	// between low_kw and high_kw, which only banks whose profile can
	// switch that fast may do (preflight refuses the rest).
	OpTrain = "train" // driver, period_s, duty_pct, duration_s, ?stall_at_s, ?stall_s, ?low_kw, ?high_kw, ?action, ?expect
	// OpGridDip dips the grid's voltage at the point of interconnection
	// to voltage_pu for duration_s: the simulator's grid, or on a real
	// site a test bench's grid simulator the operator drives (action,
	// expect).
	OpGridDip = "grid_dip" // target, voltage_pu, duration_s, ?action, ?expect
	// OpStopTraining ends the training pattern a train step started: the
	// fleet's nodes idle, the load banks at zero. The runner also ends it
	// when the case ends or the run aborts.
	OpStopTraining = "stop_training"
)

// Drivers of a train step.
const (
	DriverFleet     = "fleet"      // the fleet's GPUs run the pattern
	DriverLoadBanks = "load_banks" // every IT module's load bank switches it
)

// Check kinds; Fields lists what each needs beyond id, kind, side,
// channel and sources.
const (
	InBand         = "in_band"         // every sample inside [min, max]
	MaxDeviation   = "max_deviation"   // every sample inside reference ± max_deviation
	RecoveryTime   = "recovery_time"   // after every load edge, back inside [min, max] within within_s
	AlarmWithin    = "alarm_within"    // the alarm channel raised within within_s of from
	NoInterruption = "no_interruption" // every sample at or above min (at or below max)
	SettlesWithin  = "settles_within"  // inside [min, max] from from+within_s to from+for_s
	// The grid's measures of a power channel over the samples of steps,
	// resampled uniformly (internal/gridsignal defines them).
	GridRamp    = "grid_ramp"     // direction up|down: the largest rise or fall within any window_s, at most max
	GridSwing   = "grid_swing"    // the largest max - min within any window_s, at most max
	GridLine    = "grid_line"     // the largest spectral line in band_low_hz..band_high_hz over each window_s, at most max (peak)
	GridBandRMS = "grid_band_rms" // the RMS in the band (Welch, segment_s) over each window_s, at most max
	// RestoresWithin: from within_s after step from ended until for_s,
	// at least share_pct % of the channel's mean over the reference_s
	// before step from started.
	RestoresWithin = "restores_within"
)

// Directions of a ramp check.
const (
	Up   = "up"
	Down = "down"
)

// Coverage statuses.
const (
	Full       = "full"         // the plan's cases prove the clause
	Partial    = "partial"      // they prove it in part; reasons say what is missing
	Untestable = "untestable"   // no case can prove it here; reasons say why
	NotAtLevel = "not_at_level" // proved at another level; reasons say which
)

// Plan is a compiled test plan. Struct fields are declared in the
// alphabetical order of their JSON names, so encoding/json writes them
// sorted, as canonical JSON wants (a test holds this).
type Plan struct {
	// Boundaries are the boundaries the cases test, with their parties
	// and signatures (absent in plans compiled before they were kept).
	Boundaries []Boundary `json:"boundaries,omitempty"`
	Cases      []Case     `json:"cases"`
	// Commissioning is the site's levels, severities and gates (absent
	// in plans compiled before sites stated them: CommissioningRules).
	Commissioning *Commissioning    `json:"commissioning,omitempty"`
	Coverage      []Coverage        `json:"coverage"`
	Header        Header            `json:"header"`
	Interlocks    []Interlock       `json:"interlocks"` // shared by the cases that name them
	LoadBanks     []LoadBank        `json:"load_banks"`
	Sources       map[string]Source `json:"sources"` // contract path → where it is written and its value
}

// Header identifies the plan and its inputs; sat refuses a plan whose
// format, tool version or input digests do not match.
type Header struct {
	// Digest is the sha256 of the plan's own bytes as Encode writes them
	// with this field empty: sat refuses a plan whose content does not
	// match it (an edited plan). It is a checksum, not a signature.
	Digest     string  `json:"digest"`
	EstimatedS float64 `json:"estimated_s"` // total of the cases' estimates
	Format     string  `json:"format"`
	Generated  string  `json:"generated"`
	Inputs     Inputs  `json:"inputs"`
	Level      string  `json:"level"`
	Module     string  `json:"module,omitempty"` // the plan is restricted to this module
	Options    Options `json:"options"`
	Site       string  `json:"site"`
	Tool       Tool    `json:"tool"`
}

// Tool names the program and version that wrote the plan.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Options are the compile options that change the plan.
type Options struct {
	// MaxHoldS caps soak holds, ride-through holds and square-wave runs
	// (0: no cap). Cases it shortens are marked partial in the coverage.
	MaxHoldS float64 `json:"max_hold_s"`
}

// Inputs are the digests of what the plan was compiled from.
type Inputs struct {
	Boundaries map[string]string `json:"boundaries"` // boundary id → sha256 of its canonical value
	Contracts  string            `json:"contracts"`  // sha256 of the canonical {site, boundaries}
	// Files are the contract files the plan was compiled from, by path
	// relative to the contract directory ("power.cue",
	// "cue.mod/module.cue"), each with the sha256 of its bytes: sat
	// checks a plan is current by hashing them (FileDigests), without
	// compiling.
	Files         map[string]string `json:"files"`
	Schema        string            `json:"schema"`         // sha256 of the contract schema files
	SchemaVersion string            `json:"schema_version"` // the contract schema's version
}

// LoadBank is a load bank the plan drives, as the site declares it.
type LoadBank struct {
	ID            string  `json:"id"`
	Kind          string  `json:"kind"`
	MaxRateKWPerS float64 `json:"max_rate_kw_per_s,omitempty"`
	Module        string  `json:"module"`
	RatingKW      float64 `json:"rating_kw"`
	ResolutionKW  float64 `json:"resolution_kw,omitempty"`
}

// Case is one test case: it proves one clause at one level.
type Case struct {
	Boundary      string         `json:"boundary"`
	Checks        []Check        `json:"checks"`
	Clause        ClauseRef      `json:"clause"`
	Commissioning string         `json:"commissioning,omitempty"` // the site's commissioning level: L1 … L5
	EstimatedS    float64        `json:"estimated_s"`
	ID            string         `json:"id"`         // level.boundary.kind.clause
	Interlocks    []string       `json:"interlocks"` // ids into Plan.Interlocks
	Kind          string         `json:"kind"`
	Level         string         `json:"level"`
	Module        string         `json:"module"` // FAT: the module under test; SAT, IST: the loaded consumer
	Preconditions []Precondition `json:"preconditions"`
	Sampling      []Sampling     `json:"sampling"`
	Sides         []string       `json:"sides"` // the sides whose numbers the checks grade
	Steps         []Step         `json:"steps"`
	Suppressed    []Suppressed   `json:"suppressed_interlocks,omitempty"`
	Title         string         `json:"title"`
}

// ClauseRef is the contract clause a case proves.
type ClauseRef struct {
	BoundaryDigest string `json:"boundary_digest"`
	Path           string `json:"path"` // boundaries."p1-ma".steady."voltage-a"
	Pos            string `json:"pos"`  // file:line:column, relative to the contract directory
}

// Precondition kinds.
const (
	PreCasePassed   = "case_passed"    // case: an earlier case of this plan passed
	PreLoadBankIdle = "load_bank_idle" // load_bank: at 0 kW, in remote, heartbeat running
	PreState        = "state"          // text: a state the operator confirms
)

// Precondition must hold before a case starts.
type Precondition struct {
	Case     string `json:"case,omitempty"`
	Kind     string `json:"kind"`
	LoadBank string `json:"load_bank,omitempty"`
	Text     string `json:"text"`
}

// Step is one instruction of a case's program. Op says which fields it
// uses (see Fields).
type Step struct {
	Action     string   `json:"action,omitempty"`
	Channel    string   `json:"channel,omitempty"`
	Cycles     int      `json:"cycles,omitempty"`
	Driver     string   `json:"driver,omitempty"`
	DurationS  float64  `json:"duration_s,omitempty"`
	DutyPct    float64  `json:"duty_pct,omitempty"`
	EstimatedS float64  `json:"estimated_s"`
	Event      string   `json:"event,omitempty"`
	Expect     string   `json:"expect,omitempty"`
	FromKW     *float64 `json:"from_kw,omitempty"`
	HighKW     *float64 `json:"high_kw,omitempty"`
	ID         string   `json:"id"` // unique within the case; checks refer to it
	KW         *float64 `json:"kw,omitempty"`
	LoadBank   string   `json:"load_bank,omitempty"`
	LowKW      *float64 `json:"low_kw,omitempty"`
	Note       string   `json:"note,omitempty"`
	Op         string   `json:"op"`
	PeriodS    float64  `json:"period_s,omitempty"`
	RateKWPerS float64  `json:"rate_kw_per_s,omitempty"`
	StallAtS   float64  `json:"stall_at_s,omitempty"`
	StallS     float64  `json:"stall_s,omitempty"`
	Target     string   `json:"target,omitempty"`
	TimeoutS   float64  `json:"timeout_s,omitempty"`
	VoltagePU  *float64 `json:"voltage_pu,omitempty"`
}

// Check grades a channel's samples against numbers from the contract.
// The window is either steps (the samples taken during those steps) or
// from (time zero at the end of that step) and for_s.
type Check struct {
	BandHighHz   float64  `json:"band_high_hz,omitempty"`
	BandLowHz    float64  `json:"band_low_hz,omitempty"`
	Channel      string   `json:"channel"`
	Direction    string   `json:"direction,omitempty"`
	ForS         float64  `json:"for_s,omitempty"`
	From         string   `json:"from,omitempty"`
	ID           string   `json:"id"` // unique within the case
	Kind         string   `json:"kind"`
	Max          *float64 `json:"max,omitempty"`
	MaxDeviation *float64 `json:"max_deviation,omitempty"`
	Min          *float64 `json:"min,omitempty"`
	Reference    *float64 `json:"reference,omitempty"`
	ReferenceS   float64  `json:"reference_s,omitempty"`
	SegmentS     float64  `json:"segment_s,omitempty"`
	SharePct     float64  `json:"share_pct,omitempty"`
	Side         string   `json:"side"`
	Sources      []string `json:"sources"` // contract paths, keys of Plan.Sources
	Steps        []string `json:"steps,omitempty"`
	Unit         string   `json:"unit,omitempty"` // of min, max, reference, max_deviation
	WindowS      float64  `json:"window_s,omitempty"`
	WithinS      float64  `json:"within_s,omitempty"`
}

// Source is where a contract value a check or interlock uses is written.
type Source struct {
	Pos   string `json:"pos"`   // file:line:column
	Value string `json:"value"` // as written: "3 %"
}

// Sampling is the slowest a channel the case's checks grade may be
// sampled; the runner's preflight compares it with the bound device's
// update period. (Interlocks carry their own max_period_s.)
type Sampling struct {
	Channel    string  `json:"channel"`
	MaxPeriodS float64 `json:"max_period_s"`
	Reason     string  `json:"reason"`
}

// Interlock aborts the run (load to zero) when a safety channel leaves
// [min, max] or is silent for longer than max_silence_s. The channel is
// read at least every max_period_s while a case that names it runs.
type Interlock struct {
	Channel     string   `json:"channel"`
	ID          string   `json:"id"`
	Max         *float64 `json:"max,omitempty"`
	MaxPeriodS  float64  `json:"max_period_s"`
	MaxSilenceS float64  `json:"max_silence_s"`
	Min         *float64 `json:"min,omitempty"`
	Reason      string   `json:"reason"`
	Sources     []string `json:"sources"` // contract paths, keys of Plan.Sources
	Unit        string   `json:"unit,omitempty"`
}

// Suppressed is a safety channel deliberately not interlocked in a case,
// because the case makes it trip (a feed it opens, an alarm it raises).
type Suppressed struct {
	Channel string `json:"channel"`
	Reason  string `json:"reason"`
}

// Coverage says which cases prove a clause, and how well.
type Coverage struct {
	Cases   []string `json:"cases"`
	Clause  string   `json:"clause"`
	Pos     string   `json:"pos"`
	Reasons []string `json:"reasons,omitempty"`
	Status  string   `json:"status"`
}

// F returns a pointer to v, for the optional numbers of steps and checks.
func F(v float64) *float64 { return &v }

// Fields lists, for each step op and check kind, the fields it needs
// ("a|b": one of them; "?a": allowed, not needed); Validate enforces
// them and refuses any other field. (The JSON Schema checks each field's type and
// range; these per-op rules live here, where checking them is cheap.)
var Fields = map[string][]string{
	OpSetLoad:      {"load_bank", "kw"},
	OpRamp:         {"load_bank", "from_kw", "kw", "rate_kw_per_s"},
	OpSquareWave:   {"load_bank", "low_kw", "high_kw", "period_s", "duty_pct", "rate_kw_per_s", "cycles"},
	OpHold:         {"duration_s"},
	OpInjectFault:  {"event", "target", "action", "expect"},
	OpRestore:      {"event", "target", "action", "expect"},
	OpAwaitAlarm:   {"channel", "timeout_s"},
	OpOperator:     {"action", "expect"},
	OpTrain:        {"driver", "period_s", "duty_pct", "duration_s", "?stall_at_s", "?stall_s", "?low_kw", "?high_kw", "?action", "?expect"},
	OpGridDip:      {"target", "voltage_pu", "duration_s", "?action", "?expect"},
	OpStopTraining: {},
	InBand:         {"unit", "min|max", "steps|from", "?for_s"},
	MaxDeviation:   {"unit", "reference", "max_deviation", "steps"},
	RecoveryTime:   {"unit", "min|max", "within_s", "steps"},
	AlarmWithin:    {"within_s", "from"},
	NoInterruption: {"unit", "min", "from", "for_s", "?max"},
	SettlesWithin:  {"unit", "min|max", "within_s", "from", "for_s"},
	GridRamp:       {"unit", "max", "window_s", "direction", "steps"},
	GridSwing:      {"unit", "max", "window_s", "steps"},
	GridLine:       {"unit", "max", "band_low_hz", "band_high_hz", "window_s", "steps"},
	GridBandRMS:    {"unit", "max", "band_low_hz", "band_high_hz", "window_s", "segment_s", "steps"},
	RestoresWithin: {"share_pct", "reference_s", "within_s", "from", "for_s", "?unit"},
}

// Trains reports whether a case of the plan has a train step.
func (p *Plan) Trains() bool {
	for _, c := range p.Cases {
		for _, s := range c.Steps {
			if s.Op == OpTrain {
				return true
			}
		}
	}
	return false
}

// Case is the plan's case of id (nil: none).
func (p *Plan) Case(id string) *Case {
	for i := range p.Cases {
		if p.Cases[i].ID == id {
			return &p.Cases[i]
		}
	}
	return nil
}
