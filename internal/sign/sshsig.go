package sign

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// hash is the SSHSIG message hash; sha512 is what ssh-keygen -Y sign uses.
const hash = sshsig.HashSHA512

// LoadSigner reads an OpenSSH private key. An encrypted key needs its
// passphrase; an empty passphrase means the key must not be encrypted.
func LoadSigner(file string, passphrase []byte) (ssh.Signer, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	var signer ssh.Signer
	if len(passphrase) > 0 {
		signer, err = ssh.ParsePrivateKeyWithPassphrase(b, passphrase)
	} else {
		signer, err = ssh.ParsePrivateKey(b)
	}
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("signing key %s is encrypted: pass its passphrase through --passphrase-env, or sign the statement with ssh-keygen -Y sign (which also uses ssh-agent and hardware keys)", file)
	}
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", file, err)
	}
	return signer, nil
}

// SignMessage returns the armored SSHSIG ("-----BEGIN SSH SIGNATURE-----")
// of msg in the contract namespace, the same bytes ssh-keygen -Y sign
// writes.
func SignMessage(msg []byte, signer ssh.Signer) ([]byte, error) {
	sig, err := sshsig.Sign(bytes.NewReader(msg), signer, hash, Namespace)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return sshsig.Armor(sig), nil
}

// VerifyError says why a signature does not hold.
type VerifyError struct{ Reason string }

func (e *VerifyError) Error() string { return e.Reason }

func verifyErrorf(format string, args ...any) error {
	return &VerifyError{fmt.Sprintf(format, args...)}
}

// VerifyMessage checks that armored is a valid SSHSIG over msg in the
// contract namespace, made by a key that allowed lists for principal at
// now. It returns the signing key's fingerprint.
func VerifyMessage(msg, armored []byte, allowed *AllowedSigners, principal string, now time.Time) (string, error) {
	sig, err := parseArmored(armored)
	if err != nil {
		return "", err
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	if sig.Namespace != Namespace {
		return fp, verifyErrorf("signature is for namespace %q, not %q: it was made for another purpose", sig.Namespace, Namespace)
	}
	if err := sig.HashAlgorithm.Available(); err != nil {
		return fp, verifyErrorf("signature uses hash %q: %v", sig.HashAlgorithm, err)
	}
	if err := keyAllowed(sig.PublicKey, allowed, principal, now); err != nil {
		return fp, err
	}
	if err := sshsig.Verify(bytes.NewReader(msg), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		return fp, verifyErrorf("signature by %s %s does not match the statement (tampered or for other content): %v", sig.PublicKey.Type(), fp, err)
	}
	return fp, nil
}

func parseArmored(armored []byte) (*sshsig.Signature, error) {
	if !bytes.Contains(armored, []byte("-----BEGIN "+sshsig.PEMType+"-----")) {
		return nil, verifyErrorf("not an SSH signature: no %q block", "BEGIN "+sshsig.PEMType)
	}
	sig, err := sshsig.Unarmor(armored)
	if err != nil {
		return nil, verifyErrorf("cannot read the SSH signature (truncated or corrupted): %v", err)
	}
	return sig, nil
}

// keyAllowed explains why key may not sign for principal, or returns nil.
func keyAllowed(key ssh.PublicKey, allowed *AllowedSigners, principal string, now time.Time) error {
	fp := ssh.FingerprintSHA256(key)
	listed := allowed.Lookup(key)
	for _, s := range listed {
		if s.Allows(principal, Namespace, now) {
			return nil
		}
	}
	if len(listed) == 0 {
		return verifyErrorf("signed by %s key %s, which %s does not list: unknown signer", key.Type(), fp, allowed.File)
	}
	var others []string
	for _, s := range listed {
		if matchList(principal, s.Principals) {
			return verifyErrorf("key %s is listed for %s at %s:%d, but not for namespace %q at %s (namespaces %v, valid %s to %s)",
				fp, principal, allowed.File, s.Line, Namespace, now.UTC().Format(time.RFC3339), s.Namespaces, fmtTime(s.ValidAfter), fmtTime(s.ValidBefore))
		}
		others = append(others, strings.Join(s.Principals, ","))
	}
	return verifyErrorf("signed by the key of %s (%s), not by a key of %s", strings.Join(others, "; "), fp, principal)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "any time"
	}
	return t.UTC().Format(time.RFC3339)
}

// KeyAllowed says why allowed does not list key for principal in the
// contract namespace at now (nil: it does): a signer learns of a wrong
// key before it signs.
func KeyAllowed(key ssh.PublicKey, allowed *AllowedSigners, principal string, now time.Time) error {
	return keyAllowed(key, allowed, principal, now)
}
