package diff

// Rule ids. They are stable: CI configurations and override files name
// them. docs/diff-rules.md has an example of each.
const (
	RuleModuleAdded       = "DIFF001"
	RuleModuleRemoved     = "DIFF002"
	RuleBoundaryAdded     = "DIFF003"
	RuleBoundaryRemoved   = "DIFF004"
	RuleClauseAdded       = "DIFF005"
	RuleClauseRemoved     = "DIFF006"
	RuleTightened         = "DIFF010"
	RuleLoosened          = "DIFF011"
	RuleShifted           = "DIFF012"
	RuleNominalMoved      = "DIFF013"
	RuleToleranceChanged  = "DIFF014"
	RuleUnitChanged       = "DIFF015"
	RuleRequiredness      = "DIFF016"
	RuleDefaultChanged    = "DIFF017"
	RuleExcitationRaised  = "DIFF020"
	RuleExcitationLowered = "DIFF021"
	RuleReferenceChanged  = "DIFF030"
	RuleSubjectChanged    = "DIFF031"
	RuleReassigned        = "DIFF032"
	RuleChannelAdded      = "DIFF040"
	RuleChannelRemoved    = "DIFF041"
	RuleChannelChanged    = "DIFF042"
	RuleGapOpened         = "DIFF050"
	RuleGapClosed         = "DIFF051"
	RuleCheckFailed       = "DIFF052"
	RuleChanged           = "DIFF090"
	RuleTextChanged       = "DIFF091"
)

// Rule describes a rule id.
type Rule struct {
	ID, Name, Summary string
	// Supplier and Consumer give the verdict when the supplier's or the
	// consumer's statement changes; Joint when neither side owns it.
	Supplier, Consumer, Joint string
}

// Rules lists every rule in id order.
var Rules = []Rule{
	{RuleModuleAdded, "module-added", "a module appears in the site", "", "", "INFO"},
	{RuleModuleRemoved, "module-removed", "a module leaves the site", "", "", "WARN"},
	{RuleBoundaryAdded, "boundary-added", "a new joint; its parties must sign it", "", "", "INFO"},
	{RuleBoundaryRemoved, "boundary-removed", "a joint disappears with everything its supplier guaranteed",
		"ERR, breaks the consumer (its guarantees are gone)", "INFO (only requirements were dropped)", ""},
	{RuleClauseAdded, "clause-added", "a clause appears in a boundary",
		"INFO (a new guarantee)", "ERR, breaks the supplier (a new requirement)", ""},
	{RuleClauseRemoved, "clause-removed", "a clause disappears from a boundary",
		"ERR, breaks the consumer (a guarantee is gone)", "INFO (a requirement is gone)", ""},
	{RuleTightened, "bound-tightened", "a band or limit narrows",
		"INFO (a stronger guarantee)", "ERR, breaks the supplier", ""},
	{RuleLoosened, "bound-loosened", "a band or limit widens",
		"ERR, breaks the consumer", "INFO (a weaker requirement)", ""},
	{RuleShifted, "bound-shifted", "a band moves so that neither old nor new contains the other",
		"ERR, breaks the consumer", "ERR, breaks the supplier", ""},
	{RuleNominalMoved, "nominal-moved", "a band's nominal changes; the verdict follows the band",
		"INFO if the band narrows, else ERR breaking the consumer", "ERR breaking the supplier unless the band widens", ""},
	{RuleToleranceChanged, "tolerance-changed", "a band's tolerance changes; the verdict follows the band",
		"smaller: INFO; larger: ERR, breaks the consumer", "smaller: ERR, breaks the supplier; larger: INFO", ""},
	{RuleUnitChanged, "unit-changed", "the same value in another unit or form (130 kW to 130000 W): no change of meaning, but the digest changes and signatures must be renewed",
		"INFO", "INFO", "INFO"},
	{RuleRequiredness, "requiredness-changed", "a term is stated or dropped: a bound, an alarm, no_interruption, a whole guarantee or requirement",
		"stated: INFO; dropped: ERR, breaks the consumer", "stated: ERR, breaks the supplier; dropped: INFO", ""},
	{RuleDefaultChanged, "default-changed", "a value that was left to its default is now written with another value, or the reverse (duty 50 %, liquid_fraction 100 %, power_factor 1, coolant water)",
		"", "as for the term it sets (duty: higher is a larger swing)", "WARN (site inventory)"},
	{RuleExcitationRaised, "excitation-raised", "a load swing grows: step, peak, ramp rate, repetitions, duty, a shorter period, a heavier failure load",
		"INFO (the supplier withstands more)", "ERR, breaks the supplier (the consumer produces more)", ""},
	{RuleExcitationLowered, "excitation-lowered", "a load swing shrinks",
		"ERR, breaks the consumer (the supplier withstands less)", "INFO (the consumer produces less)", ""},
	{RuleReferenceChanged, "reference-changed", "an alarm channel or settle_into target names something else",
		"ERR, breaks the consumer", "ERR, breaks the supplier", ""},
	{RuleSubjectChanged, "subject-changed", "a clause now speaks of another channel, event or target", "", "", "WARN, both parties"},
	{RuleReassigned, "boundary-reassigned", "a boundary's supplier, consumer, medium or parties change", "", "", "WARN, both parties"},
	{RuleChannelAdded, "channel-added", "a boundary declares a new measurement channel", "", "", "INFO"},
	{RuleChannelRemoved, "channel-removed", "a measurement channel disappears", "", "", "WARN, both parties"},
	{RuleChannelChanged, "channel-changed", "a channel's quantity, element or safety flag changes", "", "", "WARN, both parties"},
	{RuleGapOpened, "joint-gap-opened", "the joint check finds a gap on the new side that the old side did not have; its side is whose change in that clause opened it",
		"ERR, breaks the consumer", "ERR, breaks the supplier", "ERR, both parties (both sides changed, or neither: the inventory did)"},
	{RuleGapClosed, "joint-gap-closed", "a gap of the old side is gone", "", "", "INFO"},
	{RuleCheckFailed, "check-failed", "another vet finding new on the new side: budgets, references, clause form, shared dependencies", "", "", "ERR for errors, WARN for warnings"},
	{RuleChanged, "changed", "any other change of meaning, such as site inventory", "", "", "WARN"},
	{RuleTextChanged, "text-changed", "a description changes", "", "", "INFO"},
}

// RuleByID returns the rule with id.
func RuleByID(id string) (Rule, bool) {
	for _, r := range Rules {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

func ruleName(id string) string {
	r, _ := RuleByID(id)
	return r.Name
}

// effect is how a change moves a statement.
type effect int

const (
	stronger effect = iota // a narrower band, a tighter limit, a larger excitation withstood or produced
	weaker
	shifted // neither contains the other
)

// verdict applies the direction rule: a supplier's statement is a
// promise, a consumer's a demand. A stronger promise and a weaker demand
// are safe; a weaker promise breaks the consumer; a stronger demand
// breaks the supplier; a shift breaks the other side.
func verdict(side string, e effect) (Severity, string) {
	other := map[string]string{"supplier": "consumer", "consumer": "supplier"}[side]
	switch {
	case side == "supplier" && e == stronger, side == "consumer" && e == weaker:
		return Info, ""
	}
	return Err, other
}
