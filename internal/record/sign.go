package record

import (
	"bytes"
	"fmt"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Namespace is the SSHSIG namespace of a record's signature, so that it
// can never pass for an evidence or contract signature, nor one of
// those for it: ssh-keygen -Y verify -n seam-record checks it too.
const Namespace = "seam-record"

// Sign is the armored SSHSIG of record.json's bytes.
func Sign(raw []byte, s ssh.Signer) ([]byte, error) {
	sig, err := sshsig.Sign(bytes.NewReader(raw), s, sshsig.HashSHA512, Namespace)
	if err != nil {
		return nil, fmt.Errorf("signing the record: %w", err)
	}
	return sshsig.Armor(sig), nil
}

// SignatureError says why a record's signature does not hold.
type SignatureError struct{ Detail string }

func (e *SignatureError) Error() string { return e.Detail }

// CheckSignature checks armored, an SSHSIG over raw in the record's
// namespace, and returns the signing key's fingerprint. With trusted
// keys (nil: any key), the key must be one of them.
func CheckSignature(raw, armored []byte, trusted []ssh.PublicKey) (string, error) {
	sig, err := sshsig.Unarmor(armored)
	if err != nil {
		return "", &SignatureError{fmt.Sprintf("%s is not an SSH signature: %v", SigFile, err)}
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	if sig.Namespace != Namespace {
		return fp, &SignatureError{fmt.Sprintf("%s is made for namespace %q, not %q: it signs something else", SigFile, sig.Namespace, Namespace)}
	}
	if err := sshsig.Verify(bytes.NewReader(raw), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		return fp, &SignatureError{fmt.Sprintf("%s by %s does not match %s: the record was changed after it was signed", SigFile, fp, JSONFile)}
	}
	if trusted != nil && !isTrusted(sig.PublicKey, trusted) {
		return fp, &SignatureError{fmt.Sprintf("%s is signed by %s, which is not a trusted key", SigFile, fp)}
	}
	return fp, nil
}

func isTrusted(k ssh.PublicKey, trusted []ssh.PublicKey) bool {
	for _, t := range trusted {
		if bytes.Equal(t.Marshal(), k.Marshal()) {
			return true
		}
	}
	return false
}
