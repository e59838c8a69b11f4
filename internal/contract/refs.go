package contract

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
)

// Reference rule ids.
const (
	RuleUnknownModule  = "REF001"
	RuleUnknownChannel = "REF002"
	RuleUnknownElement = "REF003"
	RuleChannelKind    = "REF004"
	RuleUnknownClause  = "REF005"
	RuleUnknownShared  = "REF006"
	RuleDuplicate      = "DUP001"
	RuleKind           = "KIND001"
	RuleSettleKind     = "REF008"
	RuleParties        = "REF009"
)

// index maps every inventory id to its kind: modules ("ma"), racks
// ("ma/r01"), PDUs, blocks ("p1/block"), feeds, loops, CDUs, pumps,
// networks; and shared dependencies and channels by name.
type index struct {
	elements map[string]string
	feeds    map[string]*Feed
	blocks   map[string]*Block
	loops    map[string]*Loop
	shared   map[string]*Shared
	channels map[string]*Boundary // channel name → the boundary declaring it
}

func newIndex(c *Contracts) *index {
	idx := &index{elements: map[string]string{}, feeds: map[string]*Feed{}, blocks: map[string]*Block{}, loops: map[string]*Loop{},
		shared: map[string]*Shared{}, channels: map[string]*Boundary{}}
	for _, m := range c.Site.Modules {
		idx.elements[m.ID] = "module"
		for _, r := range m.Racks {
			idx.elements[r.ID] = "rack"
			for _, p := range r.PDUs {
				idx.elements[p.ID] = "pdu"
			}
		}
		for _, b := range m.Blocks {
			idx.elements[b.ID] = "power block"
			idx.blocks[b.ID] = b
			for _, f := range b.Feeds {
				idx.elements[f.ID] = "feed"
				idx.feeds[f.ID] = f
			}
		}
		for _, l := range m.Loops {
			idx.elements[l.ID] = "cooling loop"
			idx.loops[l.ID] = l
			for _, cdu := range l.CDUs {
				idx.elements[cdu.ID] = "cdu"
				for _, p := range cdu.Pumps {
					idx.elements[p.ID] = "pump"
				}
			}
		}
		for _, n := range m.Networks {
			idx.elements[n.ID] = "network"
		}
	}
	for _, s := range c.Site.Shared {
		idx.shared[s.ID] = s
	}
	return idx
}

func didYouMean(s string, known []string) string { return cueload.DidYouMean(s, known) }

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// refChecker reports unknown references.
type refChecker struct {
	c     *Contracts
	idx   *index
	diags *diag.List
}

func (rc refChecker) module(r Ref, path, what string) *Module {
	if r.To == "" {
		return nil
	}
	m := rc.c.Site.Module(r.To)
	if m == nil {
		var ids []string
		for _, m := range rc.c.Site.Modules {
			ids = append(ids, m.ID)
		}
		rc.diags.Errorf(RuleUnknownModule, r.Pos, path, "%s: %s %q is not a module of site %q", path, what, r.To, rc.c.Site.Name).Hint = didYouMean(r.To, ids)
	}
	return m
}

// element checks that r names an inventory element of one of kinds (any
// kind when none are given).
func (rc refChecker) element(r Ref, path, what string, kinds ...string) bool {
	if r.To == "" {
		return false
	}
	kind, ok := rc.idx.elements[r.To]
	if !ok {
		rc.diags.Errorf(RuleUnknownElement, r.Pos, path, "%s: %s %q is not in the site inventory", path, what, r.To).Hint =
			didYouMean(r.To, rc.idsOf(kinds))
		return false
	}
	if len(kinds) > 0 && !contains(kinds, kind) {
		rc.diags.Errorf(RuleUnknownElement, r.Pos, path, "%s: %s %q is a %s, not a %s", path, what, r.To, kind, strings.Join(kinds, " or ")).Hint =
			"name a " + strings.Join(kinds, " or ") + didYouMeanSuffix(r.To, rc.idsOf(kinds))
		return false
	}
	return true
}

func (rc refChecker) idsOf(kinds []string) []string {
	var out []string
	for id, k := range rc.idx.elements {
		if len(kinds) == 0 || contains(kinds, k) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func checkRefs(c *Contracts, idx *index, diags *diag.List) {
	rc := refChecker{c: c, idx: idx, diags: diags}
	checkInventory(rc)
	seenJoint := map[string]*Boundary{}
	for _, b := range c.Boundaries {
		path := "boundaries." + quoteLabel(b.ID)
		sup := rc.module(b.Supplier, path+".supplier", "supplier")
		var con *Module
		if b.Medium == "grid" {
			// the whole site takes its power from the grid
			if b.Consumer.To != c.Site.Name {
				diags.Errorf(RuleKind, b.Consumer.Pos, path+".consumer", "%s.consumer: a grid boundary's consumer is the whole site, %q, not %q", path, c.Site.Name, b.Consumer.To).Hint = fmt.Sprintf("consumer: %q", c.Site.Name)
			}
		} else {
			con = rc.module(b.Consumer, path+".consumer", "consumer")
		}
		checkMedium(b, sup, con, path, diags)
		checkParties(b, sup, con, path, diags)
		key := b.Supplier.To + ">" + b.Consumer.To + ">" + b.Medium
		if other, ok := seenJoint[key]; ok {
			diags.Errorf(RuleDuplicate, b.Pos, path, "%s: a second %s boundary from %s to %s; %s already joins them", path, b.Medium, b.Supplier.To, b.Consumer.To, other.ID).
				Related = []diag.Related{{Pos: other.Pos, Message: "the first boundary " + other.ID}}
		}
		seenJoint[key] = b
		for _, ch := range b.Channels {
			if other, ok := idx.channels[ch.Name]; ok {
				diags.Errorf(RuleDuplicate, ch.Pos, path, "%s: channel %q is also declared by boundary %s", path, ch.Name, other.ID).
					Related = []diag.Related{{Pos: other.Pos, Message: "boundary " + other.ID}}
			}
			idx.channels[ch.Name] = b
			if ch.At.To != "" {
				rc.element(ch.At, path+".channels."+quoteLabel(ch.Name)+".at", "measured element")
			}
		}
		checkClauseRefs(rc, b)
	}
}

// eventTargets lists the kinds of element each failure event can happen to.
var eventTargets = map[string][]string{
	"feed_loss":         {"feed"},
	"breaker_open":      {"feed", "pdu"},
	"ups_on_battery":    {"feed", "power block"},
	"pump_trip":         {"pump"},
	"cdu_trip":          {"cdu"},
	"leak":              {"cooling loop", "cdu", "rack"},
	"controller_silent": {"network", "module"},
}

func checkMedium(b *Boundary, sup, con *Module, path string, diags *diag.List) {
	if b.Medium == "grid" && sup != nil && sup.Kind != "" && sup.Kind != "utility" {
		diags.Errorf(RuleKind, b.Supplier.Pos, path, "%s: a grid boundary needs a utility module as supplier, but %q is %s %s module", path, sup.ID, article(sup.Kind), sup.Kind).
			Related = []diag.Related{{Pos: sup.Pos, Message: "module " + sup.ID}}
		return
	}
	if sup == nil || con == nil || sup.Kind == "" {
		return
	}
	if sup == con {
		diags.Errorf(RuleKind, b.Supplier.Pos, path, "%s: supplier and consumer are the same module %q", path, sup.ID)
		return
	}
	want := map[string]string{"electrical": "power", "liquid": "cooling", "controls": "controls"}[b.Medium]
	if want != "" && sup.Kind != want {
		diags.Errorf(RuleKind, b.Supplier.Pos, path, "%s: %s %s boundary needs a %s module as supplier, but %q is %s %s module", path, article(b.Medium), b.Medium, want, sup.ID, article(sup.Kind), sup.Kind).
			Related = []diag.Related{{Pos: sup.Pos, Message: "module " + sup.ID}}
	}
}

func checkInventory(rc refChecker) {
	site := rc.c.Site
	for _, m := range site.Modules {
		path := "site.modules." + quoteLabel(m.ID)
		for _, d := range m.DependsOn {
			if _, ok := rc.idx.shared[d.To]; !ok && rc.idx.elements[d.To] != "module" {
				rc.diags.Errorf(RuleUnknownShared, d.Pos, path, "%s.depends_on: %q is neither a shared dependency nor a module", path, d.To).Hint = didYouMean(d.To, keys(rc.idx.shared))
			}
		}
		checkKindContent(m, path, rc.diags)
		for _, r := range m.Racks {
			rc.element(r.CooledBy, r.Path+".cooled_by", "cooled_by", "cooling loop")
			for _, p := range r.PDUs {
				rc.element(p.Feed, p.Path+".feed", "feed", "feed")
			}
		}
		for _, b := range m.Blocks {
			for _, p := range b.Powers {
				rc.module(p, b.Path+".powers", "powered module")
			}
		}
		for _, l := range m.Loops {
			for _, p := range l.Cools {
				rc.module(p, l.Path+".cools", "cooled module")
			}
		}
		for _, n := range m.Networks {
			for _, s := range n.Serves {
				rc.module(s, path+".networks."+quoteLabel(strings.TrimPrefix(n.ID, m.ID+"/"))+".serves", "served module")
			}
		}
	}
	for _, lb := range site.LoadBanks {
		rc.module(lb.Module, "site.loadbanks."+quoteLabel(lb.ID)+".module", "load bank module")
	}
	for _, s := range site.Shared {
		if rc.idx.elements[s.ID] == "module" {
			rc.diags.Errorf(RuleDuplicate, s.Pos, "site.shared."+quoteLabel(s.ID), "site.shared.%s: id %q is also a module", quoteLabel(s.ID), s.ID)
		}
	}
}

// checkKindContent: racks only in IT modules, blocks only in power
// modules, and so on.
func checkKindContent(m *Module, path string, diags *diag.List) {
	has := map[string]bool{"it": len(m.Racks) > 0, "power": len(m.Blocks) > 0, "cooling": len(m.Loops) > 0, "controls": len(m.Networks) > 0}
	what := map[string]string{"it": "racks", "power": "blocks", "cooling": "loops", "controls": "networks"}
	for _, kind := range []string{"it", "power", "cooling", "controls"} {
		if has[kind] && kind != m.Kind && m.Kind != "" {
			diags.Errorf(RuleKind, m.Pos, path, "%s: %s %s module declares %s; only %s modules hold %s", path, article(m.Kind), m.Kind, what[kind], kind, what[kind]).Hint = "move the " + what[kind] + " into a module of kind " + kind + ", or change this module's kind"
		}
	}
}

func checkClauseRefs(rc refChecker, b *Boundary) {
	chans := map[string]*Channel{}
	for _, ch := range b.Channels {
		chans[ch.Name] = ch
	}
	channel := func(r Ref, path, what string, want ...string) {
		if r.To == "" {
			return
		}
		ch, ok := chans[r.To]
		if !ok {
			rc.diags.Errorf(RuleUnknownChannel, r.Pos, path, "%s: %s %q is not a channel of boundary %s", path, what, r.To, b.ID).Hint = didYouMean(r.To, keys(chans))
			return
		}
		if len(want) > 0 && !contains(want, string(ch.Quantity)) {
			d := rc.diags.Errorf(RuleChannelKind, r.Pos, path, "%s: %s %q measures %s, but %s is needed here", path, what, r.To, dimName(ch.Quantity), strings.Join(want, " or "))
			d.Related = []diag.Related{{Pos: ch.Pos, Message: "channel " + ch.Name}}
			var fit []string
			for _, c := range b.Channels {
				if contains(want, string(c.Quantity)) {
					fit = append(fit, c.Name)
				}
			}
			d.Hint = "name a channel that measures " + strings.Join(want, " or ") + didYouMeanSuffix(r.To, fit) + ", or fix the channel's quantity"
		}
	}
	steady := map[string]bool{}
	steadyOn := map[string]string{} // steady clause → its channel
	for _, s := range b.Steady {
		steady[s.Name] = true
		steadyOn[s.Name] = s.Channel.To
		channel(s.Channel, s.Path()+".channel", "channel")
	}
	for _, t := range b.Transient {
		channel(t.Channel, t.Path()+".channel", "channel")
		channel(t.Excitation.Channel, t.Path()+".excitation.channel", "excitation channel", "power")
		for _, r := range []Response{t.Guarantee, t.Require} {
			s := r.SettleInto
			if s.To != "" && !steady[s.To] {
				rc.diags.Errorf(RuleUnknownClause, s.Pos, t.Path(), "%s: settle_into %q is not a steady clause of boundary %s", t.Path(), s.To, b.ID).Hint = didYouMean(s.To, keys(steady))
				continue
			}
			if s.To == "" {
				continue
			}
			on, self := chans[steadyOn[s.To]], chans[t.Channel.To]
			if on != nil && self != nil && on.Quantity != self.Quantity {
				d := rc.diags.Errorf(RuleSettleKind, s.Pos, t.Path(), "%s: the response on %s (%s) settles into steady clause %q, which bands %s (%s): a response settles into a band of its own quantity",
					t.Path(), self.Name, dimName(self.Quantity), s.To, on.Name, dimName(on.Quantity))
				var same []string
				for _, st := range b.Steady {
					if ch := chans[st.Channel.To]; ch != nil && ch.Quantity == self.Quantity {
						same = append(same, st.Name)
					}
				}
				d.Hint = "name a steady clause on a " + dimName(self.Quantity) + " channel" + didYouMeanSuffix(s.To, same)
			}
		}
	}
	for _, f := range b.Failure {
		channel(f.Channel, f.Path()+".channel", "channel")
		rc.element(f.Target, f.Path()+".target", "target of "+f.Event, eventTargets[f.Event]...)
		for _, beh := range []Behaviour{f.Guarantee, f.Require} {
			channel(beh.Alarm, f.Path()+".alarm", "alarm", "alarm")
		}
	}
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func didYouMeanSuffix(s string, known []string) string {
	if g := cueload.Closest(s, known); len(g) > 0 && len(g) <= 3 {
		return ", such as " + strings.Join(g, " or ")
	}
	if len(known) > 0 {
		return ", such as " + known[0]
	}
	return ""
}

// checkParties wants both vendors of a joint among its parties: a vendor
// that is not a party never signs what it guarantees or requires.
func checkParties(b *Boundary, sup, con *Module, path string, diags *diag.List) {
	for _, m := range []*Module{sup, con} {
		if m == nil || m.Vendor == "" || slices.Contains(b.Parties, m.Vendor) {
			continue
		}
		side := "supplier"
		if m == con {
			side = "consumer"
		}
		diags.Errorf(RuleParties, firstValid(b.PartiesPos, b.Pos), path+".parties", "%s: the %s %s is made by %s, which is not among the parties %s: %s would never sign its own side",
			path, side, m.ID, m.Vendor, strings.Join(quoted(b.Parties), ", "), m.Vendor).Hint = fmt.Sprintf("add %q to parties", m.Vendor)
	}
}

func quoted(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Quote(x)
	}
	return out
}
