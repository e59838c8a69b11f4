// Package sign signs contracts per boundary with SSH keys and verifies
// the signatures. The signed unit of a boundary is the canonical JSON of
// the boundary together with the supplier and consumer modules it refers
// to (their inventory gives meaning to "100 %" of a load), so a change to
// one joint invalidates that joint's signatures and no other. A grid
// boundary's unit holds the utility and every IT and power module: their
// racks, answers and UPSs make the power the grid sees.
//
// Each party signs a small JSON statement naming the unit's digest; the
// signature is an OpenSSH SSHSIG over the statement's bytes, so a vendor
// can check it with `ssh-keygen -Y verify` alone.
package sign

import (
	"encoding/json"
	"fmt"
	"sort"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/internal/canon"
	"github.com/seamdc/seam/internal/contract"
)

// Unit is what the parties of one boundary sign.
type Unit struct {
	Boundary  string
	Parties   []string
	Canonical []byte // canonical JSON of {"boundary": …, "modules": {…}}
	Digest    string // "sha256:<hex>" of Canonical
}

// Units returns the signed unit of every boundary, sorted by boundary id.
func Units(c *contract.Contracts) ([]Unit, error) {
	var out []Unit
	for _, b := range c.Boundaries {
		u, err := unitOf(c, b)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Boundary < out[j].Boundary })
	return out, nil
}

func unitOf(c *contract.Contracts, b *contract.Boundary) (Unit, error) {
	root := c.Loaded.Value
	bj, err := rawJSON(root, cue.MakePath(cue.Str("boundaries"), cue.Str(b.ID)))
	if err != nil {
		return Unit{}, fmt.Errorf("boundary %s: %w", b.ID, err)
	}
	modules := map[string]json.RawMessage{}
	for _, id := range c.SignedModules(b) {
		mj, err := rawJSON(root, cue.MakePath(cue.Str("site"), cue.Str("modules"), cue.Str(id)))
		if err != nil {
			return Unit{}, fmt.Errorf("boundary %s: module %q: %w", b.ID, id, err)
		}
		modules[id] = mj
	}
	doc, err := json.Marshal(map[string]any{"boundary": bj, "modules": modules})
	if err != nil {
		return Unit{}, fmt.Errorf("boundary %s: %w", b.ID, err)
	}
	cj, err := canon.Bytes(doc)
	if err != nil {
		return Unit{}, fmt.Errorf("boundary %s: %w", b.ID, err)
	}
	return Unit{Boundary: b.ID, Parties: b.Parties, Canonical: cj, Digest: canon.DigestBytes(cj)}, nil
}

func rawJSON(root cue.Value, p cue.Path) (json.RawMessage, error) {
	v := root.LookupPath(p)
	if !v.Exists() {
		return nil, fmt.Errorf("%s does not exist", p)
	}
	return canon.JSON(v)
}
