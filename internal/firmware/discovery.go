package firmware

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/seamdc/seam/internal/canon"
	"github.com/seamdc/seam/internal/discover"
)

// Discovery is what a discovery (sat discover --format json) found of
// the trays' firmware. Its JSON holds the differences from the declared
// inventory, not every version read: a tray's component runs the
// version its firmware-drift finding names, else the version the
// inventory declares (discovery found no other).
type Discovery struct {
	File   string
	Digest string // sha256:<hex> of the file's bytes
	Site   string
	// Declared is how many declared trays the discovery compared: the
	// whole site's, or a --racks discovery's
	Declared int
	// Drift is each tray's components that run another version than
	// declared, by tray key
	Drift map[string]map[string]string
	// Unreached are the trays not read where the inventory puts them,
	// with why: no BMC reports them, or they sit in another slot or rack
	Unreached map[string]string
	// trays named by a finding, for the check against the inventory
	named []string
}

// ReadDiscovery reads a discovery file.
func ReadDiscovery(file string) (*Discovery, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	return ParseDiscovery(file, b)
}

// ParseDiscovery reads a discovery's JSON, strictly (a field
// discover.Report does not have is an error: a reconcile event or
// another file is not a discovery); errors name the file and the line.
func ParseDiscovery(file string, b []byte) (*Discovery, error) {
	var r discover.Report
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: not a discovery (sat discover --format json): %w", at(file, b, dec.InputOffset(), err), err)
	}
	if r.Site == "" {
		return nil, fmt.Errorf("%s: not a discovery (sat discover --format json): no site", file)
	}
	d := &Discovery{File: file, Digest: canon.DigestBytes(b), Site: r.Site, Declared: r.Declared,
		Drift: map[string]map[string]string{}, Unreached: map[string]string{}}
	for _, f := range r.Findings {
		switch f.Kind {
		case discover.FirmwareDrift:
			if f.Field == "" || f.Found == "" {
				return nil, fmt.Errorf("%s: tray %s: a firmware-drift finding without its component or version", file, f.Element)
			}
			if d.Drift[f.Element] == nil {
				d.Drift[f.Element] = map[string]string{}
			}
			d.Drift[f.Element][f.Field] = f.Found
		case discover.MissingTray, discover.WrongSlot, discover.WrongRack:
			d.Unreached[f.Element] = f.Message
		default:
			continue
		}
		d.named = append(d.named, f.Element)
	}
	return d, nil
}

// at is file:line:col of a decoding error, at the syntax error's offset
// or else where the decoder stopped.
func at(file string, b []byte, stopped int64, err error) string {
	off := stopped
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		off = te.Offset
	}
	// an unknown field's error has no offset: its first key in the file
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if i := bytes.Index(b, []byte(name)); i >= 0 {
			off = int64(i)
		}
	}
	off = min(max(off, 0), int64(len(b)))
	line, col := 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%s:%d:%d", file, line, col)
}

// check refuses a discovery of another site, one that names trays the
// inventory does not have, and one of only part of the trays in scope
// (declared: the trays the plan covers).
func (d *Discovery) check(s *Site, declared int, scope string) error {
	if s.Name != "" && d.Site != s.Name {
		return fmt.Errorf("%s: a discovery of site %s, not %s", d.File, d.Site, s.Name)
	}
	for _, key := range d.named {
		if s.Tray(key) == nil {
			return fmt.Errorf("%s: tray %s: no compute tray, scale-up switch tray or power shelf of %s has that key (a discovery of another inventory?)", d.File, key, s.Name)
		}
	}
	if d.Declared != declared && d.Declared != len(s.Trays) {
		return fmt.Errorf("%s: the discovery compared %d declared trays, and %s has %d: a discovery of part of the site (--racks) cannot say what the others run; discover %s whole",
			d.File, d.Declared, scope, declared, scope)
	}
	return nil
}

// version is what a tray's component runs, and whether it is known.
func (d *Discovery) version(t *Tray, component string) (string, bool) {
	if v, ok := d.Drift[t.Key][component]; ok {
		return v, true
	}
	v, ok := t.Declared[component]
	return v, ok
}
