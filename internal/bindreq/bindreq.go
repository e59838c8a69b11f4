// Package bindreq adapts the contract model to site bindings: what a
// site's contracts need bound (every channel of every boundary, every
// load bank). It is the one place that imports both internal/contract
// and internal/binding, so that the device layer (binding, probe,
// loadbank) and the run engine never depend on the contract model; sat
// passes FromContractDir to binding.LoadWith.
package bindreq

import (
	"path/filepath"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// FromContracts lists what a site needs bound: every channel of every
// boundary and every load bank. Positions are relative to the contract
// directory.
func FromContracts(c *contract.Contracts) binding.Requirements {
	req := binding.Requirements{Source: "site " + c.Site.Name}
	for _, b := range c.Boundaries {
		for _, ch := range b.Channels {
			req.Channels = append(req.Channels, binding.Want{Name: ch.Name, Dim: units.Dimension(ch.Quantity), Safety: ch.Safety, Pos: ch.Pos})
		}
	}
	for _, lb := range c.Site.LoadBanks {
		req.LoadBanks = append(req.LoadBanks, lb.ID)
	}
	return req
}

// FromContractDir loads a contract directory and lists what its site
// needs bound, with positions relative to rel (the binding directory).
// Contract problems become one diagnostic: vet the contracts first. It
// is a binding.Requirer.
func FromContractDir(dir, rel string) (binding.Requirements, diag.List, error) {
	c, cd, err := contract.Load(dir)
	if err != nil {
		return binding.Requirements{}, nil, err
	}
	var diags diag.List
	if n := cd.Count(diag.Error); n > 0 || c == nil {
		first := cd.Sorted()[0]
		d := diags.Errorf(binding.RuleContracts, binding.Rebase(rel, dir, first.Pos), "contracts", "the contracts in %s have %d error(s), the first: %s",
			binding.Rebase(rel, dir, diag.Pos{File: "."}).File, n, first.Message)
		d.Hint = "run contractc vet on them"
		return binding.Requirements{}, diags, nil
	}
	req := FromContracts(c)
	for i := range req.Channels {
		req.Channels[i].Pos = binding.Rebase(rel, dir, req.Channels[i].Pos)
	}
	req.Source = "site " + c.Site.Name + " (" + filepath.ToSlash(binding.Rebase(rel, dir, diag.Pos{File: "."}).File) + ")"
	return req, nil, nil
}

// Load reads a binding directory and checks it against the contracts
// it names.
func Load(dir string) (*binding.Binding, diag.List, error) {
	return binding.LoadWith(dir, FromContractDir)
}
