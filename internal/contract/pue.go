package contract

import (
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/diag"
)

// RuleMeter: meters design PUE cannot use.
const RuleMeter = "PUE001"

// PUE is design power usage effectiveness (The Green Grid; ISO/IEC
// 30134-2): total facility power over IT power, with how it was
// computed.
type PUE struct {
	Value    float64
	IT       float64 // kW
	Facility float64 // kW
	// How says where each term came from.
	How []string
	OK  bool
}

// DesignPUE works out design PUE from the site's meters: a utility
// meter's design draw over the IT load when one is declared, else the IT
// load plus every facility load (cooling, lighting, losses, other) over
// the IT load. The IT load is the it meters' design, else the sum of
// every IT rack's design power.
func DesignPUE(c *Contracts) PUE {
	var p PUE
	if c.Ops == nil || len(c.Ops.Meters) == 0 {
		return p
	}
	var utility, loads float64
	var utilNames, loadNames, itNames []string
	for _, m := range c.Ops.Meters {
		if !m.Design.Set {
			continue
		}
		kw := m.Design.Canon
		term := fmt.Sprintf("%s %s", m.ID, m.Design.Raw)
		switch m.Kind {
		case "it":
			p.IT += kw
			itNames = append(itNames, term)
		case "utility":
			utility += kw
			utilNames = append(utilNames, term)
		default:
			loads += kw
			loadNames = append(loadNames, fmt.Sprintf("%s (%s) %s", m.ID, m.Kind, m.Design.Raw))
		}
	}
	if p.IT == 0 {
		for _, mod := range c.Site.Modules {
			for _, r := range mod.Racks {
				p.IT += r.DesignPower.Canon
			}
		}
		p.How = append(p.How, fmt.Sprintf("IT = %s, the IT racks' design power", kw1(p.IT)))
	} else {
		p.How = append(p.How, fmt.Sprintf("IT = %s (%s)", kw1(p.IT), strings.Join(itNames, " + ")))
	}
	if utility > 0 {
		p.Facility = utility
		p.How = append(p.How, fmt.Sprintf("facility = %s, the utility meters (%s)", kw1(utility), strings.Join(utilNames, " + ")))
	} else {
		p.Facility = p.IT + loads
		p.How = append(p.How, fmt.Sprintf("facility = IT + %s (%s)", kw1(loads), strings.Join(loadNames, " + ")))
	}
	// with no facility load declared there is no design PUE, not 1.0
	if p.IT > 0 && (utility > 0 || len(loadNames) > 0) {
		p.Value, p.OK = p.Facility/p.IT, true
		p.How = append(p.How, fmt.Sprintf("PUE = facility / IT = %s / %s = %.3f", kw1(p.Facility), kw1(p.IT), p.Value))
	}
	return p
}

func kw1(v float64) string { return fmt.Sprintf("%.1f kW", v) }

// checkMeters reports meters design PUE cannot use.
func checkMeters(c *Contracts, diags *diag.List) {
	if c.Ops == nil || len(c.Ops.Meters) == 0 {
		return
	}
	for _, m := range c.Ops.Meters {
		if !m.Design.Set && m.Channel == "" {
			path := "site.meters." + quoteLabel(m.ID)
			diags.Add(diag.Diagnostic{Rule: RuleMeter, Severity: diag.Error, Pos: m.Pos, Path: path,
				Message: fmt.Sprintf("%s: a %s meter with neither a design draw nor a channel counts in no PUE", path, m.Kind),
				Hint:    `give its design draw (design: "180 kW") for design PUE, and the channel that measures it for measured PUE`})
		}
	}
	if p := DesignPUE(c); p.IT == 0 {
		diags.Add(diag.Diagnostic{Rule: RuleMeter, Severity: diag.Error, Pos: c.Ops.Meters[0].Pos, Path: "site.meters",
			Message: "site.meters: design PUE divides by the IT load, and the site has neither an it meter with a design draw nor IT racks",
			Hint:    `declare an it meter with its design draw: {kind: "it", design: "6.24 MW"}`})
	}
}
