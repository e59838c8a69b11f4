// Package canon writes the canonical JSON of an evaluated CUE value, in
// the spirit of RFC 8785: object keys sorted, numbers normalised to their
// shortest round-trip form, no insignificant whitespace, no HTML
// escaping. Formatting, comments and field order of the source do not
// change it; any change of meaning does. Digests of contracts (in plans
// and signatures) are sha256 over this form.
package canon

import (
	"fmt"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/internal/canon/canonjson"
)

// JSON returns the canonical JSON of v, which must be concrete.
func JSON(v cue.Value) ([]byte, error) {
	raw, err := v.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("canonical form: %w", err)
	}
	return Bytes(raw)
}

// Bytes canonicalises a JSON document (canonjson.Bytes: the form is
// defined there, where it links no CUE).
func Bytes(raw []byte) ([]byte, error) { return canonjson.Bytes(raw) }

// Digest returns "sha256:<hex>" of the canonical JSON of v.
func Digest(v cue.Value) (string, error) {
	b, err := JSON(v)
	if err != nil {
		return "", err
	}
	return DigestBytes(b), nil
}

// DigestBytes returns "sha256:<hex>" of b.
func DigestBytes(b []byte) string { return canonjson.Digest(b) }
