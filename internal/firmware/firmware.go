// Package firmware is firmware baselines and the rollout plan: the
// firmware each tray model must run, kept in CUE beside the contracts
// (loaded through internal/cueload with its own schema, checked with
// positioned diagnostics, FW rules); and, from a discovery (sat
// discover's JSON), the inventory and the holds already in the ledger,
// what differs and the stages a rollout takes, by failure domain, under
// the site's policy. Pure: it reads the baseline directory and the
// discovery file, nothing else, and writes nothing.
package firmware

import (
	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
)

// Dir is the firmware directory's name beside the contracts.
const Dir = "firmware"

// Rule ids of firmware baseline problems (the schema's own are
// cueload's).
const (
	RuleMixedDomain = "FW001" // a scale-up domain left with mixed versions of a component
	RuleDigest      = "FW002" // an image without a sha256 digest, or a malformed one
	RuleOrder       = "FW003" // a component ordered before one it must follow
	RuleCycle       = "FW004" // components that must each follow the other
	RuleComponent   = "FW005" // an unknown component, or one missing from order or listed twice
	RuleModel       = "FW006" // a baseline for no tray model of the inventory
	RuleReset       = "FW007" // an OnReset update without a reset: never applied
	RulePolicy      = "FW008" // a policy the inventory cannot meet
	RuleUnlimited   = "FW009" // a policy that limits nothing (warning)
	RuleUnsigned    = "FW010" // a policy that names no signer: anyone who edits the baseline changes what apply installs (warning)
)

// Rules describes every rule id a baseline's vet can report.
var Rules = map[string]string{
	cueload.RuleEmpty:      "the directory holds no .cue files",
	cueload.RuleSyntax:     "a file does not parse as CUE",
	cueload.RuleModule:     "cue.mod/module.cue is wrong",
	cueload.RulePackage:    "files declare different packages, or none",
	cueload.RuleSchema:     "a value conflicts with the firmware schema",
	cueload.RuleRequired:   "a required field is missing",
	cueload.RuleNotAllowed: "a field the schema does not know",
	RuleMixedDomain:        "a scale-up domain whose trays would run different versions of a component after the rollout",
	RuleDigest:             "an image without a sha256 digest, or one that is not 64 hexadecimal digits",
	RuleOrder:              "a component ordered before one it must follow (after)",
	RuleCycle:              "components that must each be updated after the other",
	RuleComponent:          "order or after naming no component of the baseline, or a component missing from order or listed twice",
	RuleModel:              "a baseline naming no tray model or rack design's tray group of the inventory",
	RuleReset:              "an update applied OnReset that names no reset: it would never take effect",
	RulePolicy:             "a policy the inventory cannot meet: a rack or scale-up domain larger than a stage may be",
	RuleUnlimited:          "a policy that limits neither racks per module nor nodes per stage: one stage would update everything",
	RuleUnsigned:           "a policy that names no party to sign the baseline: apply takes it unsigned",
}

// Set is a firmware directory: the baselines by key and the policy.
type Set struct {
	Dir       string
	Baselines map[string]*Baseline
	Policy    Policy
	// Digest is "sha256:<hex>" of the canonical JSON of the directory's
	// value: a plan records it, so that apply can refuse a baseline
	// changed since.
	Digest string
}

// Baseline is one tray model's (or tray group's) firmware.
type Baseline struct {
	Key        string
	Components []*Component // in update order
	Pos        diag.Pos
	OrderPos   diag.Pos
}

// Component is one component's firmware.
type Component struct {
	Name          string
	Version       string
	URI           string
	SHA256        string // 64 hex digits, lower case
	Targets       []string
	ApplyTime     string // Immediate, OnReset
	Reset         string // none, system, manager, chassis
	After         []string
	DomainUniform bool
	Pos           diag.Pos
	VersionPos    diag.Pos
}

// Resets.
const (
	ResetNone    = "none"
	ResetSystem  = "system"
	ResetManager = "manager"
	ResetChassis = "chassis"
)

// Apply times.
const (
	Immediate = "Immediate"
	OnReset   = "OnReset"
)

// Policy is the site's rollout policy; a zero limit is none.
type Policy struct {
	CanaryRacks         int  `json:"canary_racks,omitempty"`
	MaxRacksPerModule   int  `json:"max_racks_per_module,omitempty"`
	WholeScaleUpDomains bool `json:"whole_scale_up_domains"`
	ControlPlanesApart  bool `json:"control_planes_apart"`
	MaxNodesPerStage    int  `json:"max_nodes_per_stage,omitempty"`
	// SignedBy are the parties who must sign the baseline (sat firmware
	// sign) for apply to use it.
	SignedBy []string `json:"signed_by,omitempty"`
	Pos      diag.Pos `json:"-"`
}

// Component returns the baseline's component called name, or nil.
func (b *Baseline) Component(name string) *Component {
	for _, c := range b.Components {
		if c.Name == name {
			return c
		}
	}
	return nil
}
