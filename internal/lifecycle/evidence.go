package lifecycle

// The one place the lifecycle store reads evidence bundles: a small
// adapter over internal/evidence, so that the bundle's reader can
// change under it (signed checkpoints, one reader) without the store
// changing. Everything else here sees only SATProof.

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/results"
)

// SATProof is what a SAT bundle proves, once verified.
type SATProof struct {
	Dir      string
	Bundle   string // the bundle's id
	Manifest string // sha256 of manifest.json
	Site     string
	Level    string
	Module   string // the plan's module ("": every module of the site)
	Cases    int
	SignedBy string // the fingerprint of the key of its last trusted seal
}

// VerifySAT answers one question: does the bundle in dir verify, signed
// by one of trusted, as a finished SAT run of module (or of the whole
// site), with every case passed? It returns what the bundle proves, or
// an error that says why not.
func VerifySAT(dir string, trusted []ssh.PublicKey, site, module string) (SATProof, error) {
	p := SATProof{Dir: dir}
	rep, err := verifiedBundle(dir, trusted, site)
	if err != nil {
		return p, err
	}
	res := rep.Results
	p.Bundle, p.Manifest, p.SignedBy = rep.Bundle, rep.ManifestDigest, rep.SignedBy
	p.Site, p.Level, p.Module, p.Cases = res.Plan.Site, res.Plan.Level, res.Plan.Module, len(res.Cases)
	switch {
	case res.Plan.Level != "sat":
		return p, fmt.Errorf("%s is a %s run, not a site acceptance test (sat)", dir, res.Plan.Level)
	case res.Plan.Module != "" && res.Plan.Module != module:
		return p, fmt.Errorf("%s is the SAT of module %s, not of %s", dir, res.Plan.Module, orNone(module))
	case res.Outcome != results.Passed:
		return p, fmt.Errorf("%s did not pass: it %s (%d passed, %d failed, %d errors, %d aborted, %d skipped)", dir, res.Outcome,
			res.Counts.Pass, res.Counts.Fail, res.Counts.Error, res.Counts.Aborted, res.Counts.Skipped)
	case len(res.Cases) == 0:
		return p, fmt.Errorf("%s ran no case", dir)
	}
	for _, c := range res.Cases {
		if c.Outcome != grade.Pass {
			return p, fmt.Errorf("%s: case %s is %s, not passed", dir, c.ID, c.Outcome)
		}
	}
	return p, nil
}

// verifiedBundle audits dir and refuses it unless it verifies, signed
// by one of trusted, as a finished run of site (its error says why).
func verifiedBundle(dir string, trusted []ssh.PublicKey, site string) (*evidence.Report, error) {
	if len(trusted) == 0 {
		return nil, fmt.Errorf("the store's access policy names no evidence keys (evidence_keys): no signature on a bundle can count")
	}
	rep, err := evidence.Verify(dir, trusted)
	if err != nil {
		return nil, fmt.Errorf("sat verify --trust does not accept %s: %w", dir, err)
	}
	if !rep.OK() {
		all := rep.All()
		more := ""
		if len(all) > 3 {
			all, more = all[:3], fmt.Sprintf(" (and %d more)", len(rep.All())-3)
		}
		return nil, fmt.Errorf("sat verify --trust does not accept %s: %s%s", dir, strings.Join(all, "; "), more)
	}
	switch {
	case !rep.Complete || rep.Manifest == nil || rep.Results == nil || rep.Plan == nil:
		return nil, fmt.Errorf("%s is not a finished run (no run end, manifest, results or plan)", dir)
	case rep.Results.Plan.Site != site:
		return nil, fmt.Errorf("%s is a run of site %q, not of this store's site %q", dir, rep.Results.Plan.Site, site)
	}
	return rep, nil
}

// bundleModule is the module of the plan a bundle ran, read from its
// results without verifying anything ("": every module).
func bundleModule(dir string) (string, error) {
	res, err := results.Read(filepath.Join(dir, evidence.ResultsFile))
	if err != nil {
		return "", fmt.Errorf("%s is not a finished run: %w", dir, err)
	}
	return res.Plan.Module, nil
}

func orNone(module string) string {
	if module == "" {
		return "an element outside every module"
	}
	return module
}
