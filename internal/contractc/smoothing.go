package contractc

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/seamdc/seam/contracts/schema"
	"github.com/seamdc/seam/internal/atomicfile"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
)

func init() {
	register("smoothing", "write the power-smoothing settings the contract declares, per GPU model and module, as NVML profile parameters (seam.smoothing/v1)", runSmoothing).
		WithExample("contractc smoothing contracts/examples/threemodule --out smoothing.json")
}

// SmoothingFormat names the smoothing file's format.
const SmoothingFormat = "seam.smoothing/v1"

// smoothingFile is what the site's own tooling applies with NVML:
// nvmlDevicePowerSmoothingUpdatePresetProfileParam for each parameter
// not left at the default, then ...ActivatePresetProfile and
// ...SetState (docs/grid.md).
type smoothingFile struct {
	Format   string            `json:"format"`
	Site     string            `json:"site"`
	Source   string            `json:"source"`
	Settings []smoothingTarget `json:"settings"`
}

type smoothingTarget struct {
	Module   string           `json:"module"`
	GPUModel string           `json:"gpu_model"`
	Racks    []string         `json:"racks"`
	GPUs     int              `json:"gpus"`
	Profile  int              `json:"profile"`
	Params   []smoothingParam `json:"parameters"`
	// Declared is where the contract states it.
	Declared string `json:"declared"`
}

// smoothingParam is one NVML profile parameter: its id and name in
// nvml.h, the value in NVML's unit, or default (left at the driver's).
type smoothingParam struct {
	Name    string   `json:"name"`
	ParamID int      `json:"nvml_param_id"`
	NVML    string   `json:"nvml_param"`
	Value   *float64 `json:"value,omitempty"`
	Unit    string   `json:"unit,omitempty"`
	Default bool     `json:"default,omitempty"`
}

func runSmoothing(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR [--out FILE]", flag.ContinueOnError)
	out := fs.String("out", "", "write the file here (written whole, or not at all); default: print a table")
	asJSON := fs.Bool("json", false, "print the file to stdout instead of a table")
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	}
	if err != nil {
		return fail(stderr, "smoothing", fs, err)
	}
	c, diags, err := contract.Vet(pos[0])
	if err != nil {
		return fail(stderr, "smoothing", fs, err)
	}
	if c == nil || diags.Count(diag.Error) > 0 {
		diag.Text(stderr, diags.Sorted().Rebase(cli.RelDir(pos[0])))
		fmt.Fprintf(stderr, "contractc smoothing: the contract has errors; fix them first (contractc vet %s)\n", pos[0])
		return cli.ExitFindings
	}
	f := smoothingOf(c)
	switch {
	case *out != "":
		var buf bytes.Buffer
		if err := writeJSON(&buf, f); err != nil {
			return fail(stderr, "smoothing", fs, err)
		}
		if err := atomicfile.Write(*out, buf.Bytes(), 0o644); err != nil {
			return fail(stderr, "smoothing", fs, fmt.Errorf("write %s: %w", *out, err))
		}
		fmt.Fprintf(stdout, "wrote %s: %d setting(s)\n", *out, len(f.Settings))
	case *asJSON:
		err = writeJSON(stdout, f)
	default:
		err = writeSmoothing(stdout, f)
	}
	if err != nil {
		return fail(stderr, "smoothing", fs, err)
	}
	return cli.ExitOK
}

// smoothingOf groups the racks with smoothing by module, GPU model and
// declaration.
func smoothingOf(c *contract.Contracts) smoothingFile {
	f := smoothingFile{Format: SmoothingFormat, Site: c.Site.Name, Settings: []smoothingTarget{},
		Source: "NVML API Reference, Power Smoothing Information (NVML_POWER_SMOOTHING_PROFILE_PARAM_*); supported GPUs: " + fmt.Sprint(schema.PowerSmoothingGPUs())}
	for _, m := range c.Site.Modules {
		for _, r := range m.Racks {
			resp := c.Grid.Response(r)
			if resp == nil || resp.Smoothing == nil || r.GPUs == 0 {
				continue
			}
			model := contract.GPUModel(r)
			i := slices.IndexFunc(f.Settings, func(t smoothingTarget) bool {
				return t.Module == m.ID && t.GPUModel == model && t.Declared == resp.Path
			})
			if i < 0 {
				f.Settings = append(f.Settings, smoothingTarget{Module: m.ID, GPUModel: model, Profile: resp.Smoothing.Profile,
					Params: nvmlParams(resp.Smoothing), Declared: resp.Path})
				i = len(f.Settings) - 1
			}
			f.Settings[i].Racks = append(f.Settings[i].Racks, r.ID)
			f.Settings[i].GPUs += r.GPUs
		}
	}
	return f
}

// nvmlParams maps a declaration to NVML's eight profile parameters, in
// NVML's units: %, W/s, W/s, ms, W, a multiplier, a multiplier, W.
func nvmlParams(s *contract.Smoothing) []smoothingParam {
	q := func(name string, id int, nvml string, v contract.Q, scale float64, unit string) smoothingParam {
		p := smoothingParam{Name: name, ParamID: id, NVML: "NVML_POWER_SMOOTHING_PROFILE_PARAM_" + nvml, Unit: unit}
		if !v.Set {
			p.Default, p.Unit = true, ""
			return p
		}
		x := math.Round(v.Canon*scale*1e6) / 1e6
		p.Value = &x
		return p
	}
	n := func(name string, id int, nvml string, v float64) smoothingParam {
		p := smoothingParam{Name: name, ParamID: id, NVML: "NVML_POWER_SMOOTHING_PROFILE_PARAM_" + nvml}
		if math.IsNaN(v) {
			p.Default = true
			return p
		}
		p.Value = &v
		return p
	}
	// canonical units: % as is, kW/s → W/s, s → ms, kW → W
	return []smoothingParam{
		q("floor", 0, "PERCENT_TMP_FLOOR", s.Floor, 1, "%"),
		q("ramp_up", 1, "RAMP_UP_RATE", s.RampUp, 1000, "W/s"),
		q("ramp_down", 2, "RAMP_DOWN_RATE", s.RampDown, 1000, "W/s"),
		q("ramp_down_hysteresis", 3, "RAMP_DOWN_HYSTERESIS", s.Hysteresis, 1000, "ms"),
		q("secondary_floor", 4, "SECONDARY_POWER_FLOOR", s.SecondaryFloor, 1000, "W"),
		n("activation_window_multiplier", 5, "PRIMARY_FLOOR_ACT_WIN_MULT", s.ActivationWindowMultiplier),
		n("target_window_multiplier", 6, "PRIMARY_FLOOR_TAR_WIN_MULT", s.TargetWindowMultiplier),
		q("activation_offset", 7, "PRIMARY_FLOOR_ACT_OFFSET", s.ActivationOffset, 1000, "W"),
	}
}

func writeSmoothing(w io.Writer, f smoothingFile) error {
	if len(f.Settings) == 0 {
		_, err := fmt.Fprintf(w, "site %s declares no power smoothing\n", f.Site)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range f.Settings {
		fmt.Fprintf(tw, "module %s, %d %s GPUs in %d racks, preset profile %d (%s)\n", t.Module, t.GPUs, t.GPUModel, len(t.Racks), t.Profile, t.Declared)
		fmt.Fprintln(tw, "parameter\tNVML id\tvalue")
		for _, p := range t.Params {
			v := "driver default"
			if p.Value != nil {
				v = fmt.Sprintf("%g %s", *p.Value, p.Unit)
			}
			fmt.Fprintf(tw, "%s\t%d (%s)\t%s\n", p.Name, p.ParamID, p.NVML, v)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// writeGrid prints each grid boundary's clauses against the modelled
// site power (contractc budget).
func writeGrid(w io.Writer, c *contract.Contracts) {
	for _, b := range c.GridBoundaries() {
		a, _ := contract.AssessGrid(c, b)
		if a == nil || len(a.Figures) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "\nGRID: %s at the point of interconnection (rated %s; %d GPUs, every module in phase, %d iteration periods)\n",
			b.ID, b.Grid.Rated.Raw, a.GPUs, len(a.Periods))
		fmt.Fprintln(tw, "clause\tsite\tlimit\tworst at\tstatus")
		for _, f := range a.Figures {
			at := fmt.Sprintf("period %.3g s", f.Period)
			if f.Freq > 0 {
				at += fmt.Sprintf(", %.3g Hz", f.Freq)
			}
			if f.Where != "" {
				at += ", " + f.Where
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Clause, kw(f.Measured), kw(f.Limit), at, status(f.OK()))
		}
		fmt.Fprintf(tw, "the job's mean site power %s\n", kw(a.Energy))
		tw.Flush()
	}
}
