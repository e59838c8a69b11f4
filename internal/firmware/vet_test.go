package firmware

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
)

// base is a clean baseline of the example's compute and switch trays;
// each case of TestVetRules changes it.
const base = `package firmware

baselines: {
	"GB300 compute tray": {
		order: ["bmc", "bios"]
		components: {
			bmc: {
				version: "25.09-2"
				image: {uri: "https://images.example/bmc.fwpkg", sha256: "9f8f3a9f59e9c9104ea5b94b3ad08d34843dad2dd9be0ee3537e2e08d460d429"}
				targets: ["/redfish/v1/UpdateService/FirmwareInventory/BMC"]
				apply_time: "Immediate"
				reset: "manager"
				domain_uniform: false
			}
			bios: {
				version: "1.5.0"
				image: {sha256: "fa3b6dbca641661ec903564e3fd076a8bbc60227ae3d4a4bc905f385110e5086"}
				targets: ["/redfish/v1/UpdateService/FirmwareInventory/BIOS"]
				apply_time: "OnReset"
				reset: "system"
				after: ["bmc"]
			}
		}
	}
	"NVLink switch tray": {
		order: ["bios"]
		components: bios: {
			version: "1.5.0"
			image: {sha256: "eb6886e753cb54196fda2ddb6b149e2f37ddf9af22a26546d492902eeb1ea5cb"}
			targets: ["/redfish/v1/UpdateService/FirmwareInventory/BIOS"]
			apply_time: "OnReset"
			reset: "system"
		}
	}
}

policy: {
	canary: racks: 1
	max_racks_per_module: 1
	signed_by: ["GPUWorks"]
}
`

// TestVetRules: each rule's failing example, from the clean base with
// one change: the rule, severity, line (the line holding at) and
// words of the message and hint. The base itself is clean.
func TestVetRules(t *testing.T) {
	s := exampleSite(t)
	cases := []struct {
		name     string
		replace  []string // old, new, …
		rule     string
		warning  bool
		at       string // a text of the line the diagnostic points at ("" the directory)
		message  string
		hint     string
		excludes string // a rule that must not be reported beside it
	}{
		{name: "no digest", replace: []string{`image: {sha256: "fa3b6dbca641661ec903564e3fd076a8bbc60227ae3d4a4bc905f385110e5086"}`, `image: {uri: "https://images.example/bios.fwpkg"}`},
			rule: RuleDigest, at: "bios: {", message: `baselines."GB300 compute tray".components.bios: component bios of GB300 compute tray has no image digest`, hint: "sha256"},
		{name: "no image at all", replace: []string{`image: {sha256: "fa3b6dbca641661ec903564e3fd076a8bbc60227ae3d4a4bc905f385110e5086"}`, ``},
			rule: RuleDigest, at: "bios: {", message: "has no image digest"},
		{name: "malformed digest", replace: []string{`sha256: "eb6886e753cb54196fda2ddb6b149e2f37ddf9af22a26546d492902eeb1ea5cb"`, `sha256: "sha256:eb6886e7"`},
			rule: RuleDigest, at: `sha256: "sha256:eb6886e7"`, message: `"sha256:eb6886e7" is not a sha256 digest (64 hexadecimal digits)`, hint: "without a prefix"},
		{name: "ordered before a dependency", replace: []string{`order: ["bmc", "bios"]`, `order: ["bios", "bmc"]`},
			rule: RuleOrder, at: `after: ["bmc"]`, message: "bios is ordered before bmc, which it must follow", hint: "move bios after bmc in order"},
		{name: "cycle", replace: []string{`reset: "manager"`, `reset: "manager"` + "\n\t\t\t\tafter: [\"bios\"]"},
			rule: RuleCycle, at: "bios: {", message: "components of GB300 compute tray must each be updated after the other: bios after bmc after bios", excludes: RuleOrder},
		{name: "unknown component in order", replace: []string{`order: ["bmc", "bios"]`, `order: ["bmc", "bios", "gpu"]`},
			rule: RuleComponent, at: `order: ["bmc", "bios", "gpu"]`, message: `"gpu" is no component of GB300 compute tray`, hint: "are bios, bmc"},
		{name: "missing from order", replace: []string{`order: ["bmc", "bios"]`, `order: ["bmc"]`},
			rule: RuleComponent, at: "bios: {", message: "component bios is missing from order"},
		{name: "listed twice", replace: []string{`order: ["bmc", "bios"]`, `order: ["bmc", "bmc", "bios"]`},
			rule: RuleComponent, at: `order: ["bmc", "bmc", "bios"]`, message: "bmc is listed twice"},
		{name: "unknown dependency", replace: []string{`after: ["bmc"]`, `after: ["bmcc"]`},
			rule: RuleComponent, at: `after: ["bmcc"]`, message: `"bmcc" is no component of GB300 compute tray`, hint: `did you mean "bmc"?`},
		{name: "unknown model", replace: []string{`"GB300 compute tray": {`, `"GB300 compute tary": {`},
			rule: RuleModel, at: `"GB300 compute tary": {`, message: `no compute tray, scale-up switch tray or power shelf of the inventory is model "GB300 compute tary"`, hint: `did you mean "GB300 compute tray"?`},
		{name: "mixed versions in a scale-up domain", replace: []string{"\t\t\tversion: \"1.5.0\"\n\t\t\timage: {sha256: \"eb68", "\t\t\tversion: \"1.5.1\"\n\t\t\timage: {sha256: \"eb68"},
			rule: RuleMixedDomain, at: `version: "1.5.1"`,
			message: "bios 1.5.1 of NVLink switch tray and 1.5.0 of GB300 compute tray would run side by side in scale-up domain ma/r01/scale-up (and 47 more)", hint: "domain_uniform: false"},
		{name: "OnReset without a reset", replace: []string{"apply_time: \"OnReset\"\n\t\t\treset: \"system\"", "apply_time: \"OnReset\"\n\t\t\treset: \"none\""},
			rule: RuleReset, at: `reset: "none"`, message: "component bios of NVLink switch tray is applied OnReset but names no reset: it would never take effect"},
		{name: "policy a rack cannot meet", replace: []string{"max_racks_per_module: 1", "max_nodes_per_stage: 10"},
			rule: RulePolicy, at: "policy: {", message: "policy: rack ma/r01 holds 18 nodes, more than a stage may take (max_nodes_per_stage 10): a stage updates a rack whole", hint: "raise max_nodes_per_stage to 18 or more"},
		{name: "a policy that limits nothing", replace: []string{"\tmax_racks_per_module: 1\n", ""},
			rule: RuleUnlimited, warning: true, at: "policy: {", message: "neither max_racks_per_module nor max_nodes_per_stage is set"},
		{name: "no policy", replace: []string{"policy: {\n\tcanary: racks: 1\n\tmax_racks_per_module: 1\n\tsigned_by: [\"GPUWorks\"]\n}\n", ""},
			rule: RuleUnlimited, warning: true, message: "one stage would update every rack at once"},
		{name: "no signer", replace: []string{"\tsigned_by: [\"GPUWorks\"]\n", ""},
			rule: RuleUnsigned, warning: true, at: "policy: {", message: "signed_by names no party", hint: "sat firmware sign --party GPUWorks"},
		{name: "schema: a signer that cannot be a file name", replace: []string{`signed_by: ["GPUWorks"]`, `signed_by: ["GPU Works"]`},
			rule: cueload.RuleSchema, at: `signed_by: ["GPU Works"]`, message: "signed_by"},
		{name: "schema: apply time", replace: []string{`apply_time: "Immediate"`, `apply_time: "Later"`},
			rule: cueload.RuleSchema, at: `apply_time: "Later"`, message: "apply_time"},
		{name: "schema: targets missing", replace: []string{"\t\t\ttargets: [\"/redfish/v1/UpdateService/FirmwareInventory/BIOS\"]\n\t\t\tapply_time: \"OnReset\"\n\t\t\treset: \"system\"\n\t\t}", "\t\t\tapply_time: \"OnReset\"\n\t\t\treset: \"system\"\n\t\t}"},
			rule: cueload.RuleRequired, at: "components: bios: {", message: "targets"},
		{name: "unknown top-level field", replace: []string{"policy: {", "polcy: {"},
			rule: cueload.RuleNotAllowed, at: "polcy: {", message: "polcy"},
	}
	_, clean := vetSource(t, s, base)
	assert.Empty(t, clean, "the base is clean")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := base
			for i := 0; i < len(c.replace); i += 2 {
				require.Contains(t, src, c.replace[i])
				src = strings.Replace(src, c.replace[i], c.replace[i+1], 1)
			}
			_, diags := vetSource(t, s, src)
			var got *diag.Diagnostic
			for i, d := range diags {
				if d.Rule == c.rule {
					got = &diags[i]
					break
				}
			}
			require.NotNil(t, got, "no %s in %v", c.rule, diags)
			assert.Contains(t, got.Message, c.message)
			assert.Contains(t, got.Hint, c.hint)
			if c.warning {
				assert.Equal(t, diag.Warning, got.Severity)
			} else {
				assert.Equal(t, diag.Error, got.Severity)
			}
			if c.at == "" {
				assert.Equal(t, ".", got.Pos.File)
			} else {
				assert.Equal(t, "baseline.cue", got.Pos.File, "%v", got)
				assert.Equal(t, lineOf(t, src, c.at), got.Pos.Line, "%s: %s", got.Pos, got.Message)
				assert.Positive(t, got.Pos.Col)
			}
			if c.excludes != "" {
				for _, d := range diags {
					assert.NotEqual(t, c.excludes, d.Rule, "%s beside %s: %s", c.excludes, c.rule, d.Message)
				}
			}
		})
	}
}

// vetSource loads src as a firmware directory and vets it against the
// site, as sat firmware vet does.
func vetSource(t *testing.T, s *Site, src string) (*Set, diag.List) {
	t.Helper()
	set, diags, err := Load(writeFiles(t, map[string]string{"baseline.cue": src}))
	require.NoError(t, err)
	if set != nil {
		diags = append(diags, Vet(set, s)...)
	}
	return set, diags.Sorted()
}

// The mixed-version rule names the related position of the other
// baseline's version, and a component every tray model has of its own
// (domain_uniform: false) is never mixed.
func TestMixedDomainRelatedAndOptOut(t *testing.T) {
	s := exampleSite(t)
	src := strings.Replace(base, "\t\t\tversion: \"1.5.0\"\n\t\t\timage: {sha256: \"eb68", "\t\t\tversion: \"1.5.1\"\n\t\t\timage: {sha256: \"eb68", 1)
	_, diags := vetSource(t, s, src)
	require.Len(t, diags, 1, "%v", diags)
	require.Len(t, diags[0].Related, 1)
	assert.Equal(t, lineOf(t, src, `version: "1.5.0"`), diags[0].Related[0].Pos.Line)
	assert.Equal(t, "bios of GB300 compute tray", diags[0].Related[0].Message)

	optOut := strings.Replace(src, "\t\t\treset: \"system\"\n\t\t}\n\t}\n}", "\t\t\treset: \"system\"\n\t\t\tdomain_uniform: false\n\t\t}\n\t}\n}", 1)
	require.NotEqual(t, src, optOut)
	_, diags = vetSource(t, s, optOut)
	assert.Empty(t, diags, "only one side opts out, and that is enough: the two are different parts")
}

// The example's baseline vets clean against its inventory, and its
// digest is stable: the canonical JSON's, not the files' bytes.
func TestExampleBaseline(t *testing.T) {
	s := exampleSite(t)
	set, diags, err := Load(exampleDir + "/" + Dir)
	require.NoError(t, err)
	diags = append(diags, Vet(set, s)...)
	assert.Empty(t, diags)
	assert.Equal(t, []string{"33 kW power shelf", "GB300 compute tray", "NVLink switch tray"}, sortedKeys(set.Baselines))
	c := set.Baselines["GB300 compute tray"]
	require.Len(t, c.Components, 2)
	assert.Equal(t, "bmc", c.Components[0].Name, "in order's order, not by name")
	assert.Equal(t, []string{"bmc"}, c.Components[1].After)
	assert.Equal(t, Policy{CanaryRacks: 1, MaxRacksPerModule: 1, WholeScaleUpDomains: true, ControlPlanesApart: true, SignedBy: []string{"GPUWorks"}, Pos: set.Policy.Pos}, set.Policy)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, set.Digest)

	again, _, err := Load(writeFiles(t, map[string]string{"a.cue": "package firmware\n\n// reformatted, same value\n" + strings.ReplaceAll(readFile(t, exampleDir+"/firmware/baseline.cue"), "package firmware\n", "")}))
	require.NoError(t, err)
	assert.Equal(t, set.Digest, again.Digest)
}

// Every rule a vet can report is described (SARIF's rules, the docs).
func TestRulesDescribed(t *testing.T) {
	for _, r := range []string{RuleMixedDomain, RuleDigest, RuleOrder, RuleCycle, RuleComponent, RuleModel, RuleReset, RulePolicy, RuleUnlimited, RuleUnsigned} {
		assert.NotEmpty(t, Rules[r], r)
		assert.Contains(t, readFile(t, "../../docs/firmware.md"), "| "+r+" |", "docs/firmware.md's table lacks %s", r)
	}
}
