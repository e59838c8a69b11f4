package contract

import (
	"fmt"
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
)

// Controls-network rule ids: the facility event bus off the GPU network.
const (
	RuleControlsFabric = "CTLNET001"
	RuleControlsSwitch = "CTLNET002"
)

// fabricKind names the inventory switches that belong to the GPU
// network: the data fabric's top-of-rack switches and the scale-up
// (NVLink-class) switch trays.
func fabricKind(k inventory.Kind) string {
	switch k {
	case inventory.KindTorSwitch:
		return "data fabric (a top-of-rack switch)"
	case inventory.KindScaleUpSwitch:
		return "scale-up fabric (a scale-up switch tray)"
	}
	return ""
}

// fabricUsers lists the compute trays cabled to a switch, for a message.
func fabricUsers(g *inventory.Graph, id inventory.ID) string {
	n := len(g.In(inventory.Connects, id))
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", which %d trays' traffic shares", n)
}

// checkControlsNet checks the controls networks and the controllers'
// cabling against the inventory's connects graph: no switch of the data
// or scale-up fabric carries facility alarms, and no single switch holds
// the controllers of modules in separate failure domains.
func checkControlsNet(c *Contracts, g *inventory.Graph, diags *diag.List) {
	if c.Ops == nil {
		return
	}
	onFabric := func(ref Ref, path, what string) {
		id, ok := g.Lookup(ref.To)
		if !ok {
			return
		}
		fabric := fabricKind(g.El(id).Kind)
		if fabric == "" {
			return
		}
		diags.Add(diag.Diagnostic{Rule: RuleControlsFabric, Severity: diag.Error, Pos: ref.Pos, Path: path,
			Message: fmt.Sprintf("%s: %s rides on %s, a switch of the %s%s: a storm or a fault on the GPU network would silence facility alarms",
				path, what, ref.To, fabric, fabricUsers(g, id)),
			Hint: "carry facility alarms on switches of their own (the controls network's), or on the management network, never on the data or scale-up fabric"})
	}
	var nets []string
	for n := range c.Ops.NetworkSwitches {
		nets = append(nets, n)
	}
	sort.Strings(nets)
	for _, n := range nets {
		mod, name, _ := strings.Cut(n, "/")
		path := "site.modules." + quoteLabel(mod) + ".networks." + quoteLabel(name) + ".switches"
		for _, sw := range c.Ops.NetworkSwitches[n] {
			onFabric(sw, path, "controls network "+n+", which carries facility alarms,")
		}
	}
	domain := map[string]string{}
	for _, m := range c.Site.Modules {
		domain[m.ID] = m.FailureDomain
	}
	// the switch each single-homed controller hangs on
	type homed struct {
		e   *Equipment
		pos diag.Pos
	}
	only := map[string][]homed{}
	for _, e := range c.Ops.Equipment {
		if e.Kind != "controller" {
			continue
		}
		path := "site.equipment." + quoteLabel(e.ID) + ".switches"
		for _, sw := range e.Switches {
			onFabric(sw, path, "controller "+e.ID+" of module "+e.Module)
			crossDomain(c, g, e, sw, domain, path, diags)
		}
		if len(e.Switches) == 1 {
			only[e.Switches[0].To] = append(only[e.Switches[0].To], homed{e, e.Switches[0].Pos})
		}
	}
	var switches []string
	for sw := range only {
		switches = append(switches, sw)
	}
	sort.Strings(switches)
	for _, sw := range switches {
		hs := only[sw]
		domains := map[string][]string{}
		var ds []string
		for _, h := range hs {
			d := domain[h.e.Module]
			if _, ok := domains[d]; !ok {
				ds = append(ds, d)
			}
			domains[d] = append(domains[d], h.e.Module)
		}
		if len(ds) < 2 {
			continue
		}
		sort.Strings(ds)
		var who []string
		for _, d := range ds {
			who = append(who, fmt.Sprintf("%s (%s)", d, strings.Join(domains[d], ", ")))
		}
		d := diag.Diagnostic{Rule: RuleControlsSwitch, Severity: diag.Error, Pos: hs[0].pos, Path: "site.equipment." + quoteLabel(hs[0].e.ID) + ".switches",
			Message: fmt.Sprintf("hidden shared dependency from the cabling: the controllers of failure domains %s are cabled to switch %s alone; "+
				"it failing silences them all, though no depends_on says so", strings.Join(who, ", "), sw),
			Hint: "cable each controller to two switches of the controls network (switches: [\"ctl-sw-1\", \"ctl-sw-2\"]), or give each failure domain its own switch"}
		for _, h := range hs[1:] {
			d.Related = append(d.Related, diag.Related{Pos: h.pos, Message: "controller " + h.e.ID + " of " + h.e.Module})
		}
		diags.Add(d)
	}
}

// crossDomain reports a controller cabled to a switch that the inventory
// places in a module of another failure domain: the switch's rack power
// is then a dependency of the controller's module that no depends_on
// declares.
func crossDomain(c *Contracts, g *inventory.Graph, e *Equipment, sw Ref, domain map[string]string, path string, diags *diag.List) {
	id, ok := g.Lookup(sw.To)
	if !ok {
		return
	}
	mid := g.Ancestor(id, inventory.KindModule)
	if mid == inventory.None {
		return
	}
	host := g.El(mid).Key
	if host == e.Module || domain[host] == domain[e.Module] {
		return
	}
	diags.Add(diag.Diagnostic{Rule: RuleControlsSwitch, Severity: diag.Error, Pos: sw.Pos, Path: path,
		Message: fmt.Sprintf("%s: hidden shared dependency from the cabling: controller %s of module %s (failure domain %s) is cabled to %s, "+
			"a switch in module %s of failure domain %s: %s losing power silences it, though no depends_on says so",
			path, e.ID, e.Module, domain[e.Module], sw.To, host, domain[host], host),
		Hint: "cable the controller to the controls network's own switches, or to a switch of its own failure domain"})
}
