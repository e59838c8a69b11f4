package apply

import (
	"errors"
	"fmt"
	"io"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/capping"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
)

// Targets are the caps' BMCs where the binding's bmcs section says they
// answer (its endpoints, else the caps file's bmc_address), and how to
// reach them, with the binding's allow-list as Writable. The bmcs
// section's diagnostics go to stderr.
func Targets(site string, caps *capping.File, lookupEnv func(string) (string, bool), stderr io.Writer) ([]Target, Options, error) {
	bm, bd, err := binding.LoadBMCs(site)
	if err == nil && bd.Count(diag.Error) > 0 {
		diag.Text(stderr, bd)
		err = fmt.Errorf("the bmcs section of %s has %d error(s)", site, bd.Count(diag.Error))
	}
	if err == nil && bm == nil {
		err = fmt.Errorf("the binding in %s has no bmcs section: add one (user, password, endpoints, and writable: [%q])", site, Writable)
	}
	if err != nil {
		return nil, Options{}, err
	}
	access, err := bmchttp.FromBinding(bm, lookupEnv)
	if err != nil {
		return nil, Options{}, err
	}
	opt := Options{Access: access, Writable: bm.Writable}
	addr := map[string]string{}
	for _, e := range bm.Endpoints {
		addr[e.Name] = e.Address
	}
	var out []Target
	var errs []error
	for _, c := range caps.Caps {
		a := addr[c.BMC]
		if a == "" {
			a = c.BMCAddress
		}
		if a == "" {
			errs = append(errs, fmt.Errorf("node %s: BMC %s is not among the binding's bmcs.endpoints and the caps file gives no bmc_address: add it to the bmcs section in %s", c.Node, c.BMC, site))
			continue
		}
		out = append(out, Target{Cap: c, URL: bm.Scheme + "://" + a})
	}
	return out, opt, errors.Join(errs...)
}

// Drifted says whether a read result differs from its target's cap.
func Drifted(r Result, t Target) bool {
	return r.Err == nil && (r.ReadBackW-t.Watts > 0.5 || t.Watts-r.ReadBackW > 0.5)
}
