package evidence

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/atomicfile"
)

// A bundle's journal is chained and sealed, so a record edited, removed
// or inserted shows. What nothing inside a bundle can show is a tail
// cut off: the journal truncated back to before an amendment (a failing
// capture attached, a sign-off), the attachments removed, is a bundle
// that verifies. For that, the head (the last record and its hash) is
// kept outside the bundle (an Anchor, sat verify --head-out) and given
// to Audit (AuditOptions.Anchor, sat verify --anchor). The lifecycle
// store's anchors (internal/lifecycle, Anchor) are the same idea.

// AnchorFormat names the anchor's format.
const AnchorFormat = "seam.evidence.anchor/v1"

// Anchor is a bundle's head kept outside the bundle (sat verify
// --head-out): with it, Audit finds a journal cut back to before it.
type Anchor struct {
	Format string `json:"format"`
	Bundle string `json:"bundle"`
	// Records is the number of journal records; Hash the last one's.
	Records int64  `json:"records"`
	Hash    string `json:"hash"`
	// At is the last record's time.
	At time.Time `json:"at"`
	// Key and By are who sealed the bundle last (its last valid seal),
	// when it is signed.
	Key string `json:"key,omitempty"`
	By  string `json:"by,omitempty"`
}

// who names the anchor's last sealer, or says the bundle was unsigned.
func (a *Anchor) who() string {
	switch {
	case a.Key == "":
		return "unsigned"
	case a.By != "":
		return "sealed by " + a.Key + " (" + a.By + ")"
	}
	return "sealed by " + a.Key
}

// When is the anchored record's time as messages print it.
func (a *Anchor) When() string { return a.At.UTC().Format("2006-01-02T15:04:05Z") }

// Head is the bundle's head, to keep outside it; only a bundle that
// verifies (no problems, no mismatches) has one.
func (r *Report) Head() (*Anchor, error) {
	switch {
	case !r.OK():
		return nil, fmt.Errorf("%s does not verify (%d problem(s)): no head is kept of it", r.Dir, len(r.All()))
	case r.Bundle == "" || r.Records == 0:
		return nil, fmt.Errorf("%s has no bundle record: no head is kept of it", r.Dir)
	}
	a := &Anchor{Format: AnchorFormat, Bundle: r.Bundle, Records: int64(r.Records), Hash: r.HeadHash, At: r.HeadAt.UTC()}
	if s := r.state.lastSeal; s != nil {
		a.Key, a.By = s.Key, s.By
	}
	return a, nil
}

// checkAnchor: the bundle still holds the anchored record, as it was.
// hash is the journal's hash of record a.Records ("" when it has fewer).
func (a *auditor) checkAnchor(hash string) {
	an, rep := a.opt.Anchor, a.rep
	rep.Anchored = true
	switch {
	case an.Bundle != rep.Bundle:
		a.problem("the anchor is of bundle %s, not this one (%s): give this bundle's anchor", an.Bundle, rep.Bundle)
	case int64(rep.Records) < an.Records:
		a.problem("the bundle no longer holds record %d, its head anchored at %s (%s): it ends at record %d, its tail cut back after the anchor (an amendment dropped)", an.Records, an.When(), an.who(), rep.Records)
	case hash != an.Hash:
		a.problem("record %d is not the head anchored at %s (%s): the journal up to it was rewritten", an.Records, an.When(), an.who())
	}
}

// ReadAnchor reads an anchor file strictly.
func ReadAnchor(path string) (*Anchor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("anchor: %w", err)
	}
	var a Anchor
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("anchor %s: %w (want what sat verify --head-out writes)", path, err)
	}
	if a.Format != AnchorFormat {
		return nil, fmt.Errorf("anchor %s: format %q, want %q (what sat verify --head-out writes)", path, a.Format, AnchorFormat)
	}
	digest, ok := strings.CutPrefix(a.Hash, "sha256:")
	if _, err := hex.DecodeString(digest); err != nil || !ok || len(digest) != 64 || a.Records <= 0 || a.Bundle == "" {
		return nil, fmt.Errorf("anchor %s: bundle %q, record %d with hash %q: not a bundle's head (want what sat verify --head-out writes)", path, a.Bundle, a.Records, a.Hash)
	}
	return &a, nil
}

// WriteAnchor writes a to path whole.
func WriteAnchor(path string, a *Anchor) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	return nil
}
