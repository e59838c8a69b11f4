package binding

import (
	"path/filepath"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// FromContracts lists what a site needs bound: every channel of every
// boundary and every load bank. Positions are relative to the contract
// directory.
func FromContracts(c *contract.Contracts) Requirements {
	req := Requirements{Source: "site " + c.Site.Name}
	for _, b := range c.Boundaries {
		for _, ch := range b.Channels {
			req.Channels = append(req.Channels, Want{Name: ch.Name, Dim: units.Dimension(ch.Quantity), Safety: ch.Safety, Pos: ch.Pos})
		}
	}
	for _, lb := range c.Site.LoadBanks {
		req.LoadBanks = append(req.LoadBanks, lb.ID)
	}
	return req
}

// FromContractDir loads a contract directory and lists what its site
// needs bound, with positions relative to rel (the binding directory).
// Contract problems become one diagnostic: vet the contracts first.
func FromContractDir(dir, rel string) (Requirements, diag.List, error) {
	c, cd, err := contract.Load(dir)
	if err != nil {
		return Requirements{}, nil, err
	}
	var diags diag.List
	if n := cd.Count(diag.Error); n > 0 || c == nil {
		first := cd.Sorted()[0]
		d := diags.Errorf(RuleContracts, rebase(rel, dir, first.Pos), "contracts", "the contracts in %s have %d error(s), the first: %s", rebase(rel, dir, diag.Pos{File: "."}).File, n, first.Message)
		d.Hint = "run contractc vet on them"
		return Requirements{}, diags, nil
	}
	req := FromContracts(c)
	for i := range req.Channels {
		req.Channels[i].Pos = rebase(rel, dir, req.Channels[i].Pos)
	}
	req.Source = "site " + c.Site.Name + " (" + filepath.ToSlash(rebase(rel, dir, diag.Pos{File: "."}).File) + ")"
	return req, nil, nil
}
