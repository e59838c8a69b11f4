package diff

import (
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/contract"
)

func boundaryPath(b *contract.Boundary) string { return "boundaries." + quoteLabel(b.ID) }

func (d *differ) boundaries() {
	olds := map[string]*contract.Boundary{}
	for _, b := range d.old.C.Boundaries {
		olds[b.ID] = b
	}
	news := map[string]bool{}
	for _, nb := range d.new.C.Boundaries {
		news[nb.ID] = true
		d.cover(boundaryPath(nb))
		ob, ok := olds[nb.ID]
		if !ok {
			d.add(RuleBoundaryAdded, Info, "", loc{path: boundaryPath(nb), boundary: nb, new: nb.Pos}, nil,
				"new boundary between %s and %s; %s must sign it", nb.Supplier.To, nb.Consumer.To, strings.Join(nb.Parties, " and "))
			continue
		}
		d.boundary(ob, nb)
	}
	for _, ob := range d.old.C.Boundaries {
		if news[ob.ID] {
			continue
		}
		d.cover(boundaryPath(ob))
		l := loc{path: boundaryPath(ob), boundary: ob, old: ob.Pos}
		if promises(ob) {
			d.add(RuleBoundaryRemoved, Err, "supplier", l, []Party{d.party("consumer", ob)},
				"boundary removed: everything %s guaranteed to %s is gone", ob.Supplier.To, ob.Consumer.To)
		} else {
			d.add(RuleBoundaryRemoved, Info, "consumer", l, nil,
				"boundary removed: it held only %s's requirements", ob.Consumer.To)
		}
	}
}

// promises reports whether the supplier states anything at b.
func promises(b *contract.Boundary) bool {
	for _, s := range b.Steady {
		if s.Guarantee.Set {
			return true
		}
	}
	for _, t := range b.Transient {
		if t.Guarantee.Set || t.Withstand.Set {
			return true
		}
	}
	for _, f := range b.Failure {
		if f.Guarantee.Set {
			return true
		}
	}
	return false
}

func (d *differ) boundary(ob, nb *contract.Boundary) {
	p := boundaryPath(nb)
	for _, fld := range []struct {
		name     string
		old, new string
		oldAt    contract.Ref
		newAt    contract.Ref
	}{
		{"supplier", ob.Supplier.To, nb.Supplier.To, ob.Supplier, nb.Supplier},
		{"consumer", ob.Consumer.To, nb.Consumer.To, ob.Consumer, nb.Consumer},
		{"medium", ob.Medium, nb.Medium, contract.Ref{Pos: ob.Pos}, contract.Ref{Pos: nb.Pos}},
		{"parties", strings.Join(ob.Parties, ", "), strings.Join(nb.Parties, ", "), contract.Ref{Pos: ob.Pos}, contract.Ref{Pos: nb.Pos}},
	} {
		if fld.old != fld.new {
			d.add(RuleReassigned, Warn, "", loc{path: p + "." + fld.name, boundary: nb, old: fld.oldAt.Pos, new: fld.newAt.Pos},
				d.both(nb), "%s %q → %q: the joint now binds other parties; every clause must be re-read and re-signed", fld.name, fld.old, fld.new)
		}
	}
	d.channels(ob, nb)
	d.clauses(ob, nb)
}

func (d *differ) channels(ob, nb *contract.Boundary) {
	olds := map[string]*contract.Channel{}
	for _, c := range ob.Channels {
		olds[c.Name] = c
	}
	seen := map[string]bool{}
	for _, nc := range nb.Channels {
		seen[nc.Name] = true
		l := loc{path: boundaryPath(nb) + ".channels." + quoteLabel(nc.Name), boundary: nb, new: nc.Pos}
		oc, ok := olds[nc.Name]
		if !ok {
			d.add(RuleChannelAdded, Info, "", l, nil, "new %s channel", nc.Quantity)
			continue
		}
		l.old = oc.Pos
		if oc.Quantity != nc.Quantity {
			d.add(RuleChannelChanged, Warn, "", l, d.both(nb), "quantity %s → %s: clauses and device bindings on it must change too", oc.Quantity, nc.Quantity)
		}
		if oc.At.To != nc.At.To {
			d.add(RuleChannelChanged, Warn, "", l, d.both(nb), "measured at %q → %q", oc.At.To, nc.At.To)
		}
		if oc.Safety != nc.Safety {
			what := "it is now a safety channel: an interlock trips when it goes silent or leaves its band"
			if !nc.Safety {
				what = "it is no longer a safety channel: no interlock watches it"
			}
			d.add(RuleChannelChanged, Warn, "", l, d.both(nb), "%s", what)
		}
	}
	for _, oc := range ob.Channels {
		if !seen[oc.Name] {
			d.add(RuleChannelRemoved, Warn, "", loc{path: boundaryPath(nb) + ".channels." + quoteLabel(oc.Name), boundary: nb, old: oc.Pos, new: nb.Pos},
				d.both(nb), "channel removed: nothing measures %s here any more", oc.Quantity)
		}
	}
}

// clause is a clause of either version, by kind.
type clause struct {
	c       *contract.Clause
	promise bool // the supplier states something
	demand  bool // the consumer states something
	s       *contract.Steady
	t       *contract.Transient
	f       *contract.Failure
}

func clausesOf(b *contract.Boundary) map[string]clause {
	out := map[string]clause{}
	for _, s := range b.Steady {
		out["steady/"+s.Name] = clause{c: &s.Clause, promise: s.Guarantee.Set, demand: s.Require.Set, s: s}
	}
	for _, t := range b.Transient {
		out["transient/"+t.Name] = clause{c: &t.Clause, promise: t.Guarantee.Set || t.Withstand.Set, demand: true, t: t}
	}
	for _, f := range b.Failure {
		out["failure/"+f.Name] = clause{c: &f.Clause, promise: f.Guarantee.Set, demand: f.Require.Set || f.Load.Set, f: f}
	}
	return out
}

func (d *differ) clauses(ob, nb *contract.Boundary) {
	olds, news := clausesOf(ob), clausesOf(nb)
	for _, key := range sortedKeys(news) {
		nc := news[key]
		l := loc{path: clausePath(nb, nc.c), boundary: nb, new: nc.c.Pos}
		oc, ok := olds[key]
		switch {
		case !ok && nc.demand:
			d.add(RuleClauseAdded, Err, "consumer", l, []Party{d.party("supplier", nb)},
				"new %s clause: %s requires something %s has not agreed to before", nc.c.Kind, nb.Consumer.To, nb.Supplier.To)
		case !ok:
			d.add(RuleClauseAdded, Info, "supplier", l, nil, "new %s clause: %s guarantees more", nc.c.Kind, nb.Supplier.To)
		default:
			l.old = oc.c.Pos
			d.clause(l, ob, nb, oc, nc)
		}
	}
	for _, key := range sortedKeys(olds) {
		if _, ok := news[key]; ok {
			continue
		}
		oc := olds[key]
		// nothing of the new side stands where the clause was: the
		// finding is at the old side's clause
		l := loc{path: clausePath(ob, oc.c), boundary: nb, old: oc.c.Pos}
		if oc.promise {
			d.add(RuleClauseRemoved, Err, "supplier", l, []Party{d.party("consumer", nb)},
				"%s clause removed: what %s guaranteed here is gone", oc.c.Kind, nb.Supplier.To)
		} else {
			d.add(RuleClauseRemoved, Info, "consumer", l, nil, "%s clause removed: it held only %s's requirement", oc.c.Kind, nb.Consumer.To)
		}
	}
}

func clausePath(b *contract.Boundary, c *contract.Clause) string {
	return boundaryPath(b) + "." + c.Kind + "." + quoteLabel(c.Name)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
