// Package canon writes the canonical JSON of an evaluated CUE value, in
// the spirit of RFC 8785: object keys sorted, numbers normalised to their
// shortest round-trip form, no insignificant whitespace, no HTML
// escaping. Formatting, comments and field order of the source do not
// change it; any change of meaning does. Digests of contracts (in plans
// and signatures) are sha256 over this form.
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"cuelang.org/go/cue"
)

// JSON returns the canonical JSON of v, which must be concrete.
func JSON(v cue.Value) ([]byte, error) {
	raw, err := v.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("canonical form: %w", err)
	}
	return Bytes(raw)
}

// Bytes canonicalises a JSON document.
func Bytes(raw []byte) ([]byte, error) {
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return nil, fmt.Errorf("canonical form: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// encoding/json sorts map keys and writes float64 in the shortest
	// form that round-trips, switching to exponents as ECMAScript does.
	if err := enc.Encode(x); err != nil {
		return nil, fmt.Errorf("canonical form: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Digest returns "sha256:<hex>" of the canonical JSON of v.
func Digest(v cue.Value) (string, error) {
	b, err := JSON(v)
	if err != nil {
		return "", err
	}
	return DigestBytes(b), nil
}

// DigestBytes returns "sha256:<hex>" of b.
func DigestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
