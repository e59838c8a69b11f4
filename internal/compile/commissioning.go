package compile

import (
	"cmp"
	"slices"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
)

// sigMissing is internal/sign's status of a party that has not signed.
const sigMissing = "missing"

// commission gives the plan the site's commissioning rules and each
// case its level, so that readers need not know the defaults of the
// compiler that wrote it.
func (k *compiler) commission(p *plan.Plan) {
	p.Commissioning = k.c.CommissioningRules()
	for i := range p.Cases {
		p.Cases[i].Commissioning = p.Commissioning.LevelOf(&p.Cases[i])
	}
}

// boundaries records the boundaries the plan's cases test, sorted by
// id: their supplier and consumer with each module's vendor, and every
// party's signature as the options give it (missing when they do not).
func (k *compiler) boundaries(cases []plan.Case) []plan.Boundary {
	tested := map[string]bool{}
	for _, c := range cases {
		tested[c.Boundary] = true
	}
	var out []plan.Boundary
	for _, b := range k.c.Boundaries {
		if !tested[b.ID] {
			continue
		}
		out = append(out, plan.Boundary{ID: b.ID, Supplier: k.party(b.Supplier.To), Consumer: k.party(b.Consumer.To),
			Signatures: k.signatures(b)})
	}
	slices.SortFunc(out, func(a, b plan.Boundary) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// party is a side of a boundary: the module and its vendor. A grid
// boundary's consumer is the site itself, which names no vendor.
func (k *compiler) party(module string) plan.Party {
	if m := k.c.Site.Module(module); m != nil {
		return plan.Party{Module: module, Party: m.Vendor}
	}
	return plan.Party{Module: module}
}

// signatures are the boundary's parties in its order, each with the
// signature the options found.
func (k *compiler) signatures(b *contract.Boundary) []plan.Signature {
	found := k.opt.Signatures[b.ID]
	out := make([]plan.Signature, 0, len(b.Parties))
	for _, party := range b.Parties {
		i := slices.IndexFunc(found, func(s plan.Signature) bool { return s.Party == party })
		if i < 0 {
			out = append(out, plan.Signature{Party: party, Status: sigMissing})
			continue
		}
		out = append(out, found[i])
	}
	return out
}
