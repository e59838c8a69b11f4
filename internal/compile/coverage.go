package compile

import (
	"fmt"
	"slices"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
)

// coverage lists every clause of the boundaries in scope with the cases
// that prove it and how well.
func (k *compiler) coverage(cases []plan.Case) []plan.Coverage {
	proved := map[string][]string{}
	for _, c := range cases {
		proved[c.Clause.Path] = append(proved[c.Clause.Path], c.ID)
		if c.Kind == plan.Grid {
			// a grid case grades other grid clauses too (the job's swing)
			for _, cl := range k.gridGraded(c) {
				if cl != c.Clause.Path && !slices.Contains(proved[cl], c.ID) {
					proved[cl] = append(proved[cl], c.ID)
				}
			}
		}
	}
	out := []plan.Coverage{}
	for _, b := range k.c.Boundaries {
		if m := k.opt.Module; m != "" && b.Supplier.To != m && b.Consumer.To != m {
			continue
		}
		for _, cl := range clauses(b) {
			path := cl.Path()
			cov := plan.Coverage{Clause: path, Pos: posText(cl.Pos), Cases: proved[path], Reasons: k.notes[path]}
			if cov.Cases == nil {
				cov.Cases = []string{}
			}
			switch {
			case len(cov.Cases) > 0 && len(cov.Reasons) == 0:
				cov.Status = plan.Full
			case len(cov.Cases) > 0:
				cov.Status = plan.Partial
			case k.bad[path]:
				cov.Status = plan.Untestable
			default:
				cov.Status = plan.NotAtLevel
				cov.Reasons = append(slices.Clone(cov.Reasons), k.elsewhere(b, cl))
			}
			out = append(out, cov)
		}
	}
	return out
}

// clauses lists a boundary's clauses in plan order.
func clauses(b *contract.Boundary) []*contract.Clause {
	var out []*contract.Clause
	for _, s := range b.Steady {
		out = append(out, &s.Clause)
	}
	for _, t := range b.Transient {
		out = append(out, &t.Clause)
	}
	for _, f := range b.Failure {
		out = append(out, &f.Clause)
	}
	return append(out, gridClauses(b)...)
}

// elsewhere says where a clause the plan does not prove is proved.
func (k *compiler) elsewhere(b *contract.Boundary, cl *contract.Clause) string {
	joint, kind := "SAT", cl.Kind
	switch cl.Kind {
	case plan.Failure:
		joint = "IST"
	case gridClauseKind:
		joint, kind = "IST", "grid"
	}
	lv := k.opt.Level
	switch {
	case lv == plan.FAT && k.opt.Module != "" && b.Supplier.To != k.opt.Module:
		return fmt.Sprintf("fat: FAT proves the supplier's side, in the FAT of %s; the joint is proved at %s", b.Supplier.To, joint)
	case lv == plan.FAT:
		return fmt.Sprintf("fat: %s states no guarantee for a FAT to prove; the joint is proved at %s", b.Supplier.To, joint)
	}
	if kind == "grid" {
		return fmt.Sprintf("%s: grid clauses are proved at IST, at the point-of-interconnection meter", lv)
	}
	return fmt.Sprintf("%s: %s clauses are proved at %s (the supplier's side also at FAT)", lv, kind, joint)
}
