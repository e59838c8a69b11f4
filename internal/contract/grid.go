package contract

import (
	"fmt"
	"math"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// Grid is a grid boundary's content (docs/grid.md): what the utility
// requires of the site's power at the point of interconnection and the
// training load the site declares.
type Grid struct {
	Path     string // boundaries.<id>.grid
	Rated    Q
	Channel  Ref
	RampUp   RampLimit
	RampDown RampLimit
	// Swing is the largest max - min within SwingWindow: power or % of Rated.
	Swing, SwingWindow Q
	Oscillation        *Oscillation
	VoltageRT          *VoltageRideThrough
	FrequencyRT        *FrequencyRideThrough
	Load               *TrainingLoad
	Pos                diag.Pos
}

// RampLimit is the largest change of site power within one second and
// within one minute, each a power rate.
type RampLimit struct {
	PerSecond, PerMinute Q
}

// Oscillation limits the site power's content in a band of frequencies.
type Oscillation struct {
	Low, High       Q
	Window, Segment Q
	Line, RMS       Q // power or % of Rated
	Pos             diag.Pos
}

// VoltageRideThrough is the dips the site must ride through on the grid.
type VoltageRideThrough struct {
	Curve                       []CurvePoint
	RestoreShare, RestoreWithin Q
	Pos                         diag.Pos
}

// CurvePoint: a dip down to Voltage (a ratio of nominal) lasting up to
// Duration; Duration unset is indefinitely.
type CurvePoint struct {
	Voltage, Duration Q
	Pos               diag.Pos
}

// FrequencyRideThrough is the frequency band the site stays connected in
// for Duration.
type FrequencyRideThrough struct {
	Min, Max, Duration Q
	Pos                diag.Pos
}

// TrainingLoad is the site's declared training job.
type TrainingLoad struct {
	Period, ComputeShare             Q
	Compute, Communication, Idle     Q
	CheckpointEvery, CheckpointStall Q
	Jitter                           Q
	SweepFrom, SweepTo               Q
	SweepSteps                       int
	Pos                              diag.Pos
}

// GridResponse is a module's or a rack's answer to the grid.
type GridResponse struct {
	Path      string // its contract path
	Smoothing *Smoothing
	Storage   *Storage
	Filler    Q // W per GPU in the communication phase
	GPULimit  Q // the provisioned power limit per GPU
	Pos       diag.Pos
}

// Smoothing is NVML's power-smoothing profile as the contract declares
// it; an unset Q or a NaN multiplier is the driver's default.
type Smoothing struct {
	Floor, RampUp, RampDown, Hysteresis Q
	SecondaryFloor, ActivationOffset    Q
	ActivationWindowMultiplier          float64
	TargetWindowMultiplier              float64
	Profile                             int
	Pos                                 diag.Pos
}

// Storage is energy storage in a rack or its shelves.
type Storage struct {
	Power, Energy, SoCMin, SoCMax, Response, Efficiency Q
	Pos                                                 diag.Pos
}

// UPSTransfer is when a feed's UPS takes its load off the grid.
type UPSTransfer struct {
	Feed                       *Feed
	Voltage, After, BackAfter  Q
	FrequencyMin, FrequencyMax Q
	Pos                        diag.Pos
}

// GridDesign is the site's side of its grid boundaries: the answers
// declared by modules (by module id) and racks (by rack id), and the
// UPSs' transfer settings.
type GridDesign struct {
	Responses map[string]*GridResponse
	Transfers []*UPSTransfer
}

// Response is the answer that applies to rack r: its own, else its
// module's, else nil.
func (g *GridDesign) Response(r *Rack) *GridResponse {
	if g == nil {
		return nil
	}
	if resp := g.Responses[r.ID]; resp != nil {
		return resp
	}
	return g.Responses[r.Module]
}

// GridBoundaries are the boundaries of medium grid.
func (c *Contracts) GridBoundaries() []*Boundary {
	var out []*Boundary
	for _, b := range c.Boundaries {
		if b.Medium == "grid" {
			out = append(out, b)
		}
	}
	return out
}

// SignedModules are the modules whose content a boundary's signatures
// cover besides the boundary itself: its supplier and consumer; for a
// grid boundary the utility and every IT and power module, whose racks,
// answers and UPSs shape the power the grid sees.
func (c *Contracts) SignedModules(b *Boundary) []string {
	if b.Medium != "grid" {
		return []string{b.Supplier.To, b.Consumer.To}
	}
	out := []string{b.Supplier.To}
	for _, m := range c.Site.Modules {
		if m.Kind == "it" || m.Kind == "power" {
			out = append(out, m.ID)
		}
	}
	return out
}

func (d *decoder) grid(b *Boundary, n node) *Grid {
	g := &Grid{Path: n.path, Rated: n.q("rated", units.Power), Channel: n.ref("channel"), Pos: n.pos()}
	req := n.at("require")
	if r := req.at("ramp"); r.exists() {
		g.RampUp = RampLimit{r.at("up").q("per_second", units.PowerRate), r.at("up").q("per_minute", units.PowerRate)}
		g.RampDown = RampLimit{r.at("down").q("per_second", units.PowerRate), r.at("down").q("per_minute", units.PowerRate)}
	}
	if s := req.at("swing"); s.exists() {
		g.Swing, g.SwingWindow = s.q("max", units.Power, units.Ratio), s.q("window", units.Time)
	}
	if o := req.at("oscillation"); o.exists() {
		g.Oscillation = &Oscillation{Low: o.at("band").q("low", units.Frequency), High: o.at("band").q("high", units.Frequency),
			Window: o.q("window", units.Time), Segment: o.q("segment", units.Time),
			Line: o.q("line", units.Power, units.Ratio), RMS: o.q("rms", units.Power, units.Ratio), Pos: o.pos()}
	}
	if v := req.at("voltage_ride_through"); v.exists() {
		vrt := &VoltageRideThrough{Pos: v.pos()}
		for _, p := range v.items("curve") {
			vrt.Curve = append(vrt.Curve, CurvePoint{Voltage: p.q("voltage", units.Ratio), Duration: p.q("duration", units.Time), Pos: p.pos()})
		}
		if r := v.at("restore"); r.exists() {
			vrt.RestoreShare, vrt.RestoreWithin = r.q("share", units.Ratio), r.q("within", units.Time)
		}
		g.VoltageRT = vrt
	}
	if f := req.at("frequency_ride_through"); f.exists() {
		g.FrequencyRT = &FrequencyRideThrough{Min: f.q("min", units.Frequency), Max: f.q("max", units.Frequency),
			Duration: f.q("duration", units.Time), Pos: f.pos()}
	}
	if l := n.at("load"); l.exists() {
		t := &TrainingLoad{Period: l.q("period", units.Time), ComputeShare: l.q("compute_share", units.Ratio),
			Compute: l.q("gpu_compute", units.Power), Communication: l.q("gpu_communication", units.Power),
			Idle: l.q("gpu_idle", units.Power), Jitter: l.q("jitter", units.Time), Pos: l.pos()}
		if c := l.at("checkpoint"); c.exists() {
			t.CheckpointEvery, t.CheckpointStall = c.q("every", units.Time), c.q("stall", units.Time)
		}
		if s := l.at("sweep"); s.exists() {
			t.SweepFrom, t.SweepTo, t.SweepSteps = s.q("from", units.Time), s.q("to", units.Time), s.int("steps")
		}
		g.Load = t
	}
	return g
}

// gridDesign decodes the site's answers to the grid.
func (d *decoder) gridDesign(site node) *GridDesign {
	site.path = "site"
	g := &GridDesign{Responses: map[string]*GridResponse{}}
	for _, m := range site.entries("modules") {
		if r := d.gridResponse(m.at("grid_response")); r != nil {
			g.Responses[m.name] = r
		}
		for _, r := range m.entries("racks") {
			if resp := d.gridResponse(r.at("grid_response")); resp != nil {
				g.Responses[m.name+"/"+r.name] = resp
			}
		}
		for _, b := range m.entries("blocks") {
			for _, f := range b.entries("feeds") {
				t := f.at("ups").at("transfer")
				if !t.exists() {
					continue
				}
				g.Transfers = append(g.Transfers, &UPSTransfer{Feed: &Feed{ID: m.name + "/" + b.name + "/" + f.name, Path: f.path},
					Voltage: t.q("voltage", units.Ratio), After: t.q("after", units.Time), BackAfter: t.q("back_after", units.Time),
					FrequencyMin: t.q("frequency_min", units.Frequency), FrequencyMax: t.q("frequency_max", units.Frequency), Pos: t.pos()})
			}
		}
	}
	return g
}

func (d *decoder) gridResponse(n node) *GridResponse {
	if !n.exists() {
		return nil
	}
	r := &GridResponse{Path: n.path, Filler: n.q("filler", units.Power), GPULimit: n.q("gpu_power_limit", units.Power), Pos: n.pos()}
	if s := n.at("smoothing"); s.exists() {
		r.Smoothing = &Smoothing{Floor: s.qOrDefault("floor", units.Ratio), RampUp: s.qOrDefault("ramp_up", units.PowerRate),
			RampDown: s.qOrDefault("ramp_down", units.PowerRate), Hysteresis: s.qOrDefault("ramp_down_hysteresis", units.Time),
			SecondaryFloor: s.qOrDefault("secondary_floor", units.Power), ActivationOffset: s.qOrDefault("activation_offset", units.Power),
			ActivationWindowMultiplier: s.numOrDefault("activation_window_multiplier"),
			TargetWindowMultiplier:     s.numOrDefault("target_window_multiplier"), Profile: s.int("profile"), Pos: s.pos()}
	}
	if s := n.at("storage"); s.exists() {
		r.Storage = &Storage{Power: s.q("power", units.Power), Energy: s.q("energy", units.Energy),
			SoCMin: s.q("soc_min", units.Ratio), SoCMax: s.q("soc_max", units.Ratio), Response: s.q("response", units.Time),
			Efficiency: s.q("efficiency", units.Ratio), Pos: s.pos()}
		if r.Storage.SoCMin.Set && r.Storage.SoCMax.Set && r.Storage.SoCMin.Canon >= r.Storage.SoCMax.Canon {
			d.diags.Add(diag.Diagnostic{Rule: RuleRange, Severity: diag.Error, Pos: r.Storage.SoCMin.Pos, Path: s.path + ".soc_min",
				Message: fmt.Sprintf("%s: soc_min %s is not below soc_max %s: the storage has no charge to use", s.path, r.Storage.SoCMin.Raw, r.Storage.SoCMax.Raw),
				Hint:    `keep a window, such as soc_min: "20 %", soc_max: "80 %"`})
		}
	}
	for _, sh := range []struct {
		q    *Q
		path string
	}{{shareOf(r.Smoothing, func(s *Smoothing) *Q { return &s.Floor }), n.path + ".smoothing.floor"},
		{shareOf(r.Storage, func(s *Storage) *Q { return &s.SoCMin }), n.path + ".storage.soc_min"},
		{shareOf(r.Storage, func(s *Storage) *Q { return &s.SoCMax }), n.path + ".storage.soc_max"},
		{shareOf(r.Storage, func(s *Storage) *Q { return &s.Efficiency }), n.path + ".storage.efficiency"}} {
		if sh.q != nil && sh.q.Set && (sh.q.Canon < 0 || sh.q.Canon > 100) {
			d.diags.Add(diag.Diagnostic{Rule: RuleRange, Severity: diag.Error, Pos: sh.q.Pos, Path: sh.path,
				Message: fmt.Sprintf("%s: %s is not a share", sh.path, sh.q.Raw), Hint: "write a percentage from 0 % to 100 %"})
			*sh.q = Q{}
		}
	}
	return r
}

// shareOf is the field get picks of v, nil when v is nil.
func shareOf[T any](v *T, get func(*T) *Q) *Q {
	if v == nil {
		return nil
	}
	return get(v)
}

// qOrDefault reads a quantity that may be "default" (unset).
func (n node) qOrDefault(label string, dims ...units.Dimension) Q {
	if n.str(label) == "default" {
		return Q{}
	}
	return n.q(label, dims...)
}

// numOrDefault reads a number that may be "default" (NaN).
func (n node) numOrDefault(label string) float64 {
	if !n.at(label).exists() || n.str(label) == "default" {
		return math.NaN()
	}
	return n.float(label)
}
