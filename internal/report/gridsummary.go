package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// GridSummaryFormat is the format of grid-summary.json.
const GridSummaryFormat = "seam.grid-summary/v1"

// The files sat report writes beside report.html when the bundle has
// grid cases.
const (
	GridSummaryJSONFile = "grid-summary.json"
	GridSummaryCSVFile  = "grid-summary.csv"
)

// GridSummary is what a utility's interconnection review reads: what
// was tested, how it was measured, each limit with the value measured
// and the margin, and the verdicts, all from the evidence bundle alone
// (the plan it carries, the samples, the verdicts evidence.Audit
// re-graded). docs/grid.md ("The report") documents the shape.
type GridSummary struct {
	Format   string            `json:"format"` // GridSummaryFormat
	Site     string            `json:"site"`
	Level    string            `json:"level"`
	Sim      string            `json:"simulated,omitempty"` // what the simulated site was; absent on a real site
	Evidence GridEvidence      `json:"evidence"`
	Outcome  string            `json:"outcome"` // PASS, FAIL or ERROR over the grid cases
	Counts   map[string]int    `json:"counts"`  // grid cases by verdict
	Cases    []GridSummaryCase `json:"cases"`
}

// GridEvidence identifies the evidence the summary was read from and
// says whether it verifies.
type GridEvidence struct {
	Manifest  string   `json:"manifest"` // sha256 of manifest.json ("" : the run did not finish)
	Plan      string   `json:"plan"`
	Contracts string   `json:"contracts"`
	Trust     string   `json:"trust"`    // signed by whom, up to where
	Verified  bool     `json:"verified"` // the bundle verifies and every verdict re-grades as recorded
	Problems  []string `json:"problems,omitempty"`
}

// GridSummaryCase is one grid case.
type GridSummaryCase struct {
	ID          string             `json:"id"`
	Title       string             `json:"title"`
	Clause      string             `json:"clause"`
	ClausePos   string             `json:"clause_pos"`
	Verdict     string             `json:"verdict"`
	Reason      string             `json:"reason,omitempty"`
	Start       string             `json:"start,omitempty"` // RFC 3339, site time
	End         string             `json:"end,omitempty"`
	Drives      []GridSummaryDrive `json:"drives"`
	Dips        []GridSummaryDip   `json:"dips"`
	Measurement GridMeasurement    `json:"measurement"`
	Checks      []GridSummaryCheck `json:"checks"`
}

// GridSummaryDrive is a train step: what drove the load, at what period.
type GridSummaryDrive struct {
	Step      string   `json:"step"`
	Driver    string   `json:"driver"` // fleet or load_banks
	PeriodS   float64  `json:"period_s"`
	DutyPct   float64  `json:"duty_pct"` // compute share of each period
	DurationS float64  `json:"duration_s"`
	StallAtS  float64  `json:"stall_at_s,omitempty"`
	StallS    float64  `json:"stall_s,omitempty"`
	LowKW     *float64 `json:"low_kw,omitempty"`
	HighKW    *float64 `json:"high_kw,omitempty"`
	Ran       bool     `json:"ran"`
}

// GridSummaryDip is a grid_dip step.
type GridSummaryDip struct {
	Step      string  `json:"step"`
	Target    string  `json:"target"`
	VoltagePU float64 `json:"voltage_pu"`
	DurationS float64 `json:"duration_s"`
	Ran       bool    `json:"ran"`
}

// GridMeasurement is how the POI meter was sampled.
type GridMeasurement struct {
	Channel string `json:"channel"`
	Unit    string `json:"unit"`
	Samples int    `json:"samples"` // good samples in the graded steps
	// RateAchieved is samples/s over the graded steps; RateRequired the
	// plan's (1/max_period_s), 0 where it states none.
	RateAchieved float64 `json:"rate_achieved_per_s"`
	RateRequired float64 `json:"rate_required_per_s"`
}

// GridSummaryCheck is one check: its measure, limit, value and margin
// (margin positive inside the limit), in Unit (seconds for times).
type GridSummaryCheck struct {
	ID         string       `json:"id"`
	Kind       string       `json:"kind"`
	Side       string       `json:"side"`
	Method     string       `json:"method"`
	Steps      []string     `json:"steps,omitempty"`
	WindowS    float64      `json:"window_s,omitempty"`
	Direction  string       `json:"direction,omitempty"`
	BandLowHz  float64      `json:"band_low_hz,omitempty"`
	BandHighHz float64      `json:"band_high_hz,omitempty"`
	SegmentS   float64      `json:"segment_s,omitempty"`
	From       string       `json:"from,omitempty"`
	SharePct   float64      `json:"share_pct,omitempty"`
	ReferenceS float64      `json:"reference_s,omitempty"`
	WithinS    float64      `json:"within_s,omitempty"`
	ForS       float64      `json:"for_s,omitempty"`
	Unit       string       `json:"unit"`
	Limit      *float64     `json:"limit"`
	Measured   *float64     `json:"measured"`
	Margin     *float64     `json:"margin"`
	Verdict    string       `json:"verdict"`
	Detail     string       `json:"detail"`
	AtS        *float64     `json:"at_s,omitempty"` // what decided, s since the case started
	Sources    []GridSource `json:"sources"`
}

// MarshalJSON writes a source as {path, value, pos}.
func (s GridSource) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Path  string `json:"path"`
		Value string `json:"value"`
		Pos   string `json:"pos"`
	}{s.Path, s.Value, s.Pos})
}

// GridSummary builds the interconnection summary of the run's grid cases
// (nil when it has none).
func (r *Run) GridSummary() *GridSummary {
	if len(r.Grid) == 0 {
		return nil
	}
	s := &GridSummary{Format: GridSummaryFormat, Site: r.Site, Level: r.Level, Sim: r.Sim,
		Evidence: GridEvidence{Manifest: r.ManifestDigest, Plan: r.PlanDigest, Contracts: r.ContractsDigest,
			Trust: r.Trust, Verified: r.OK(), Problems: r.Integrity},
		Counts: map[string]int{}}
	var n Counts
	for _, gc := range r.Grid {
		n.Add(gc.Verdict)
		s.Counts[gc.Verdict]++
		c := GridSummaryCase{ID: gc.ID, Title: gc.Title, Clause: gc.ClausePath, ClausePos: gc.ClausePos, Verdict: gc.Verdict,
			Reason: gc.Reason, Start: rfc3339(gc.Start), End: rfc3339(gc.End), Drives: []GridSummaryDrive{}, Dips: []GridSummaryDip{},
			Measurement: GridMeasurement{Channel: gc.Channel, Unit: gc.Unit, Samples: gc.Samples, RateAchieved: round6(gc.Rate), RateRequired: round6(gc.Required)},
			Checks:      []GridSummaryCheck{}}
		for _, d := range gc.Drives {
			c.Drives = append(c.Drives, GridSummaryDrive{Step: d.Step, Driver: d.Driver, PeriodS: d.PeriodS, DutyPct: d.DutyPct,
				DurationS: d.DurationS, StallAtS: d.StallAtS, StallS: d.StallS, LowKW: d.LowKW, HighKW: d.HighKW, Ran: d.Ran})
		}
		for _, d := range gc.Dips {
			c.Dips = append(c.Dips, GridSummaryDip{Step: d.Step, Target: d.Target, VoltagePU: d.VoltagePU, DurationS: d.DurationS, Ran: d.Ran})
		}
		for _, k := range gc.Checks {
			sk := GridSummaryCheck{ID: k.ID, Kind: k.Kind, Side: k.Side, Method: k.Method, Steps: k.steps, WindowS: k.WindowS,
				Direction: k.Direction, BandLowHz: k.BandLowHz, BandHighHz: k.BandHighHz, SegmentS: k.SegmentS, From: k.From,
				SharePct: k.SharePct, ReferenceS: k.ReferenceS, WithinS: k.WithinS, ForS: k.ForS, Unit: k.Unit,
				Verdict: k.Verdict, Detail: k.Detail, Sources: k.SourceValues}
			if sk.Sources == nil {
				sk.Sources = []GridSource{}
			}
			if k.HasLimit {
				sk.Limit = &k.Limit
			}
			if k.HasValue {
				sk.Measured, sk.Margin = &k.Measured, &k.Margin
			}
			if !math.IsNaN(k.At) {
				at := round6(k.At)
				sk.AtS = &at
			}
			c.Checks = append(c.Checks, sk)
		}
		s.Cases = append(s.Cases, c)
	}
	switch {
	case n.Fail > 0:
		s.Outcome = Fail
	case n.Pass == n.Total():
		s.Outcome = Pass
	default:
		s.Outcome = Error
	}
	return s
}

// CountsText says the counts in words, worst first: "1 failed, 1
// passed".
func (s *GridSummary) CountsText() []string {
	var out []string
	for _, v := range []struct{ verdict, word string }{{Fail, "failed"}, {Error, "error"}, {Aborted, "aborted"}, {Skipped, "skipped"}, {Pass, "passed"}} {
		if n := s.Counts[v.verdict]; n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, v.word))
		}
	}
	return out
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// GridSummaryJSON writes grid-summary.json: the run's GridSummary,
// indented.
func GridSummaryJSON(w io.Writer, r *Run) error {
	s := r.GridSummary()
	if s == nil {
		return fmt.Errorf("%s: the bundle has no grid cases", GridSummaryJSONFile)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("%s: %w", GridSummaryJSONFile, err)
	}
	return nil
}

// gridCSVHeader names grid-summary.csv's columns: one row per check,
// numbers unformatted.
var gridCSVHeader = []string{
	"case", "case_verdict", "clause", "clause_pos", "drives", "dips", "channel", "samples", "rate_achieved_per_s", "rate_required_per_s",
	"check", "kind", "side", "method", "window_s", "band_low_hz", "band_high_hz", "unit", "limit", "measured", "margin", "verdict", "detail", "sources",
}

// GridSummaryCSV writes grid-summary.csv: one row per check of every
// grid case (a case without checks gets one row, the check columns
// empty), the run's identity in no column: the JSON carries it.
func GridSummaryCSV(w io.Writer, r *Run) error {
	s := r.GridSummary()
	if s == nil {
		return fmt.Errorf("%s: the bundle has no grid cases", GridSummaryCSVFile)
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(gridCSVHeader); err != nil {
		return err
	}
	for _, c := range s.Cases {
		m := c.Measurement
		head := []string{c.ID, c.Verdict, c.Clause, c.ClausePos, drivesText(c.Drives), dipsText(c.Dips), m.Channel,
			strconv.Itoa(m.Samples), csvFloat(m.RateAchieved), csvFloat(m.RateRequired)}
		if len(c.Checks) == 0 {
			if err := cw.Write(append(head, "", "", "", "", "", "", "", "", "", "", "", "", c.Reason, "")); err != nil {
				return err
			}
		}
		for _, k := range c.Checks {
			var src []string
			for _, s := range k.Sources {
				src = append(src, fmt.Sprintf("%s = %s (%s)", s.Path, s.Value, s.Pos))
			}
			row := append(append([]string{}, head...), k.ID, k.Kind, k.Side, k.Method, csvFloat(k.WindowS), csvFloat(k.BandLowHz), csvFloat(k.BandHighHz),
				k.Unit, csvPtr(k.Limit), csvPtr(k.Measured), csvPtr(k.Margin), k.Verdict, k.Detail, strings.Join(src, "; "))
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("%s: %w", GridSummaryCSVFile, err)
	}
	return nil
}

func csvFloat(v float64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func csvPtr(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// drivesText says what drove the site: "train: fleet, 2 s period, 80 %
// compute, 600 s, stall 30 s at +300 s".
func drivesText(ds []GridSummaryDrive) string {
	var out []string
	for _, d := range ds {
		t := fmt.Sprintf("%s: %s, %g s period, %g %% compute, %g s", d.Step, d.Driver, d.PeriodS, d.DutyPct, d.DurationS)
		if d.StallS > 0 {
			t += fmt.Sprintf(", stall %g s at +%g s", d.StallS, d.StallAtS)
		}
		if d.LowKW != nil && d.HighKW != nil {
			t += fmt.Sprintf(", each bank %g–%g kW", *d.LowKW, *d.HighKW)
		}
		if !d.Ran {
			t += " (did not run)"
		}
		out = append(out, t)
	}
	return strings.Join(out, "; ")
}

func dipsText(ds []GridSummaryDip) string {
	var out []string
	for _, d := range ds {
		t := fmt.Sprintf("%s: %s to %g pu for %g s", d.Step, d.Target, d.VoltagePU, d.DurationS)
		if !d.Ran {
			t += " (did not run)"
		}
		out = append(out, t)
	}
	return strings.Join(out, "; ")
}
