package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/bmcsecret"
	"github.com/seamdc/seam/internal/inventory"
)

// WriteBinding writes the credentials, control.url and binding.cue into
// dir. The binding refers to the credentials by absolute file paths, so
// that a copy of it works from anywhere.
func (o *Opened) WriteBinding(dir, control string, scale float64, stepped bool, lookupEnv func(string) (string, bool)) error {
	secrets := SecretsFrom(lookupEnv)
	refs := SecretRefs{}
	for _, s := range []struct {
		file, value string
		ref         *string
	}{{"snmp-community", secrets.Community, &refs.Community}, {"snmp-auth", secrets.AuthPass, &refs.Auth}, {"snmp-priv", secrets.PrivPass, &refs.Priv}} {
		path := filepath.Join(dir, s.file)
		if err := os.WriteFile(path, []byte(s.value+"\n"), 0o600); err != nil {
			return err
		}
		*s.ref = "file:" + path
	}
	b := o.Binding(o.ProfileDirs, o.Paths.Contracts, refs)
	b.Simulator = &binding.Simulator{Control: control, TimeScale: scale, Stepped: stepped}
	if err := o.writeBMCs(dir); err != nil {
		return err
	}
	var text strings.Builder
	fmt.Fprintf(&text, "// The simulated site %s, served by sat sim on loopback.\n", o.Site.Name())
	if stepped {
		fmt.Fprintf(&text, "// Control interface: %s; site time moves only when advanced (POST /v1/advance).\n", control)
	} else {
		fmt.Fprintf(&text, "// Control interface: %s; site time runs %g× wall time.\n", control, scale)
	}
	if df := o.Site.Defect(); df != nil {
		fmt.Fprintf(&text, "// Defect %s: violates %s\n", df.Name, df.Violates)
	}
	text.Write(binding.Marshal(b, "binding"))
	if err := os.WriteFile(filepath.Join(dir, "control.url"), []byte(control+"\n"), 0o644); err != nil {
		return err
	}
	// written whole, then renamed into place: whoever waits for the file
	// (a script, a test) never reads half of it
	tmp := filepath.Join(dir, ".binding.cue.tmp")
	if err := os.WriteFile(tmp, []byte(text.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "binding.cue"))
}

// writeBMCs writes bmcs.cue beside the binding: the fleet's BMCs as the
// simulator serves them, their accounts in a secrets file beside it
// (bmc-secrets.json: each BMC's, and a "*" entry for a tray a defect
// adds later), and the power limit, the accounts, the firmware and the
// resets declared writable (a simulated site is where caps, rotations
// and firmware rollouts are tried: sat cap, facilityd's reconciler, sat
// bmc rotate, a firmware update); nothing when the site has no
// fleet. A compute tray's BMC names a standby account (StandbyUser), so
// that sat bmc rotate uses the two-account scheme there and the
// one-account scheme on the others.
func (o *Opened) writeBMCs(dir string) error {
	path := filepath.Join(dir, "bmc-secrets.json")
	bm := o.BMCBinding(path)
	if bm == nil {
		return nil
	}
	f := &bmcsecret.File{Path: path, Mode: 0o600, BMCs: map[string]bmcsecret.Entry{}}
	account := bmcsecret.Entry{User: o.cfg.Secrets.BMCUser, Active: o.cfg.Secrets.BMCPassword}
	f.BMCs[bmcsecret.Any] = account
	for _, e := range o.BMCs() {
		a := account
		if e.Kind == inventory.KindCompute.String() {
			a.Standby = StandbyUser(a.User)
		}
		f.BMCs[e.Name] = a
	}
	if err := f.Save(); err != nil {
		return err
	}
	bm.WritableControls = []string{binding.ControlPowerLimit, binding.ControlAccounts, binding.ControlFirmware, binding.ControlReset}
	return os.WriteFile(filepath.Join(dir, "bmcs.cue"), binding.MarshalBMCs(bm, "binding"), 0o644)
}

// StandbyUser is the name of the second service account the simulated
// site's secrets file gives a compute tray's BMC.
func StandbyUser(user string) string { return user + "-b" }
