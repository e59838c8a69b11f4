// Package canonjson is the canonical form of a JSON document, in the
// spirit of RFC 8785: object keys sorted (by their UTF-8 bytes), each
// once, numbers in the shortest form that round-trips through float64
// (exponents as ECMAScript writes them), no insignificant whitespace, no
// HTML escaping. It links no CUE, so that the evidence reader can hold a
// journal record's data to the same form that package canon gives an
// evaluated CUE value.
package canonjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Bytes canonicalises a JSON document. Of a key given twice, the last
// value is kept, as encoding/json reads it: compare a document with its
// canonical form to refuse one.
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

// Digest returns "sha256:<hex>" of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
