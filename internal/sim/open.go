package sim

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/sim/simconfig"
)

// Paths say where a simulation's inputs are.
type Paths struct {
	Contracts string // the contract directory
	Config    string // the sim config directory; "": Fixtures/sim/<site name>
	Profiles  string // the shipped profiles; "": Fixtures/profiles
	Fixtures  string // "": fixtures
}

// Opened is a loaded simulation and where it came from.
type Opened struct {
	*Sim
	Paths       Paths    // absolute, defaults filled in
	ProfileDirs []string // absolute
}

// Open loads the contracts, the sim config and the profiles and builds
// the simulation (devices not yet served). Problems in the inputs come
// back as diagnostics; an error is a tool failure.
func Open(p Paths, defect string, secrets Secrets, epoch time.Time, log *slog.Logger) (*Opened, diag.List, error) {
	c, diags, err := contract.Load(p.Contracts)
	if err != nil || c == nil || diags.Count(diag.Error) > 0 {
		return nil, diags, err
	}
	// the handover inventory, which the fleet's nodes and BMCs come from
	id, err := c.ReadInventory(nil)
	diags = append(diags, id...)
	if err != nil || id.Count(diag.Error) > 0 {
		return nil, diags, err
	}
	p, err = p.resolve(c.Site.Name)
	if err != nil {
		return nil, nil, err
	}
	cfg, cd, err := simconfig.Load(p.Config)
	if err != nil || cd.Count(diag.Error) > 0 {
		return nil, cd, err
	}
	dirs := ProfileDirs(p.Profiles, cfg)
	set, err := LoadProfiles(dirs...)
	if err != nil {
		return nil, nil, err
	}
	s, err := New(Config{Contracts: c, Sim: cfg, Profiles: set, Defect: defect, Secrets: secrets, Epoch: epoch, Log: log})
	if err != nil {
		return nil, nil, err
	}
	return &Opened{Sim: s, Paths: p, ProfileDirs: dirs}, append(diags, cd...), nil
}

// resolve fills in the defaults and makes every path absolute.
func (p Paths) resolve(site string) (Paths, error) {
	if p.Fixtures == "" {
		p.Fixtures = "fixtures"
	}
	if p.Config == "" {
		p.Config = filepath.Join(p.Fixtures, "sim", site)
	}
	if p.Profiles == "" {
		p.Profiles = filepath.Join(p.Fixtures, "profiles")
	}
	for _, s := range []*string{&p.Contracts, &p.Config, &p.Profiles, &p.Fixtures} {
		abs, err := filepath.Abs(*s)
		if err != nil {
			return p, err
		}
		*s = abs
	}
	for _, d := range []struct{ what, dir string }{{"sim config", p.Config}, {"profiles", p.Profiles}} {
		if st, err := os.Stat(d.dir); err != nil || !st.IsDir() {
			return p, fmt.Errorf("%s directory %s: not found (run from the repository root, or pass its path)", d.what, d.dir)
		}
	}
	return p, nil
}
