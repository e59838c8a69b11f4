package bmcrotate

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strings"

	"github.com/stmcginnis/gofish/schemas"
)

// Policy is a BMC's password policy, as its AccountService states it.
type Policy struct {
	MinLength, MaxLength int // 0: not stated
	// Classes is how many of the four character classes (upper, lower,
	// digit, other) a password must hold; 0: not stated.
	Classes int
}

// policyOf reads an AccountService's policy: MinPasswordLength,
// MaxPasswordLength and, where the BMC states it, the character classes
// (Oem.Seam.PasswordCharacterClasses, as seam's simulated BMC does).
func policyOf(as *schemas.AccountService) Policy {
	p := Policy{MinLength: int(as.MinPasswordLength), MaxLength: int(as.MaxPasswordLength)}
	var oem struct {
		Seam struct{ PasswordCharacterClasses int }
	}
	if len(as.OEM) > 0 && json.Unmarshal(as.OEM, &oem) == nil {
		p.Classes = oem.Seam.PasswordCharacterClasses
	}
	return p
}

// wantLength is the length seam's secrets have where the BMC allows it.
const wantLength = 24

// The character classes of a new secret; "other" keeps to characters no
// shell, URL or JSON quotes.
var classes = []string{"ABCDEFGHJKLMNPQRSTUVWXYZ", "abcdefghijkmnopqrstuvwxyz", "23456789", "-_.~"}

// NewSecret is a random secret the policy accepts: 24 characters, or
// the policy's minimum or maximum where 24 is outside them, with at
// least one character of every class.
func NewSecret(p Policy, r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	n := wantLength
	if p.MinLength > n {
		n = p.MinLength
	}
	if p.MaxLength > 0 && p.MaxLength < n {
		n = p.MaxLength
	}
	if p.MaxLength > 0 && p.MinLength > p.MaxLength {
		return "", fmt.Errorf("its password policy cannot be met: minimum length %d, maximum %d", p.MinLength, p.MaxLength)
	}
	if p.Classes > len(classes) {
		return "", fmt.Errorf("its password policy asks for %d character classes; there are %d (upper, lower, digit, other)", p.Classes, len(classes))
	}
	if n < len(classes) {
		return "", fmt.Errorf("its password policy allows at most %d characters, too few for a secret of every character class", p.MaxLength)
	}
	all := strings.Join(classes, "")
	out := make([]byte, n)
	for i := range out {
		set := all
		if i < len(classes) {
			set = classes[i]
		}
		c, err := pick(r, len(set))
		if err != nil {
			return "", err
		}
		out[i] = set[c]
	}
	// shuffle, so the classes are not always first (Fisher–Yates)
	for i := n - 1; i > 0; i-- {
		j, err := pick(r, i+1)
		if err != nil {
			return "", err
		}
		out[i], out[j] = out[j], out[i]
	}
	return string(out), nil
}

func pick(r io.Reader, n int) (int, error) {
	v, err := rand.Int(r, big.NewInt(int64(n)))
	if err != nil {
		return 0, fmt.Errorf("random secret: %w", err)
	}
	return int(v.Int64()), nil
}
