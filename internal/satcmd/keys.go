package satcmd

import (
	"fmt"
	"os"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/sign"
)

// keyFlags are how a command is told to sign: --sign-key (or --key) and
// --passphrase-env.
type keyFlags struct {
	key, passEnv string
}

// evidenceSigner loads what signs evidence (loadSSHSigner's key) and
// returns the signer and its key's fingerprint.
func evidenceSigner(k keyFlags, lookupEnv func(string) (string, bool)) (evidence.Signer, string, error) {
	s, err := loadSSHSigner(k, lookupEnv)
	if err != nil {
		return nil, "", err
	}
	return evidence.SSHSigner(s), ssh.FingerprintSHA256(s.PublicKey()), nil
}

// loadSSHSigner loads a signing key. KEY is an OpenSSH private key file
// (encrypted ones with --passphrase-env), or a public key file
// (KEY.pub) whose private key ssh-agent holds (SSH_AUTH_SOCK): a
// hardware key in the agent (PKCS#11, FIDO) signs that way.
func loadSSHSigner(k keyFlags, lookupEnv func(string) (string, bool)) (ssh.Signer, error) {
	raw, err := os.ReadFile(k.key)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	if pub, _, _, _, err := ssh.ParseAuthorizedKey(raw); err == nil {
		s, err := sign.AgentSigner(pub, lookupEnv)
		if err != nil {
			return nil, fmt.Errorf("signing key %s is a public key, so ssh-agent must hold its private key: %w", k.key, err)
		}
		return s, nil
	}
	var pass []byte
	if k.passEnv != "" {
		v, ok := lookupEnv(k.passEnv)
		if !ok {
			return nil, fmt.Errorf("--passphrase-env: %s is not set", k.passEnv)
		}
		pass = []byte(v)
	}
	return sign.LoadSigner(k.key, pass)
}

// readKeys reads an authorized_keys-format file of trusted keys.
func readKeys(path string) ([]ssh.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys []ssh.PublicKey
	for len(raw) > 0 {
		k, _, _, rest, err := ssh.ParseAuthorizedKey(raw)
		if err != nil {
			break
		}
		keys = append(keys, k)
		raw = rest
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no SSH public key in it", path)
	}
	return keys, nil
}
