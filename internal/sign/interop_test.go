package sign

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seamdc/seam/internal/peer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// These tests need ssh-keygen from openssh-client (installed by .ci/run).

var keyTypes = []struct{ name, args string }{
	{"ed25519", "-t ed25519"},
	{"ecdsa", "-t ecdsa -b 256"},
	{"rsa", "-t rsa -b 2048"},
}

// sshKeygen runs ssh-keygen with stdin and returns its combined output.
func sshKeygen(t *testing.T, stdin []byte, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(peer.Need(t, "ssh-keygen"), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// keygen makes a key pair with ssh-keygen and returns the private key's path.
func keygen(t *testing.T, dir, args string) string {
	t.Helper()
	key := filepath.Join(dir, "key")
	out, err := sshKeygen(t, nil, append(strings.Fields(args), "-q", "-N", "", "-C", "test key", "-f", key)...)
	require.NoError(t, err, out)
	return key
}

func writeAllowed(t *testing.T, dir, principal, pubFile string) string {
	t.Helper()
	pub, err := os.ReadFile(pubFile)
	require.NoError(t, err)
	file := filepath.Join(dir, "allowed_signers")
	line := fmt.Sprintf("%s namespaces=\"%s\" %s", principal, Namespace, pub)
	require.NoError(t, os.WriteFile(file, []byte(line), 0o644))
	return file
}

func TestContractcSignaturesVerifyWithSSHKeygen(t *testing.T) {
	for _, kt := range keyTypes {
		t.Run(kt.name, func(t *testing.T) {
			keys := t.TempDir()
			key := keygen(t, keys, kt.args)
			signer, err := LoadSigner(key, nil)
			require.NoError(t, err)
			allowedFile := writeAllowed(t, keys, "VoltSkid", key+".pub")
			allowed, err := ReadAllowedSigners(allowedFile)
			require.NoError(t, err)

			dir := copyDir(t, example)
			w, err := Sign(load(t, dir), Request{Party: "VoltSkid", Boundary: "p1-ma", Now: now}, signer, allowed)
			require.NoError(t, err)
			msg, err := os.ReadFile(w[0].Statement)
			require.NoError(t, err)

			out, err := sshKeygen(t, msg, "-Y", "verify", "-f", allowedFile, "-I", "VoltSkid", "-n", Namespace, "-s", w[0].Signature)
			require.NoError(t, err, out)
			assert.Contains(t, out, `Good "seam-contract" signature for VoltSkid`)

			// and ssh-keygen refuses what it must refuse
			out, err = sshKeygen(t, msg, "-Y", "verify", "-f", allowedFile, "-I", "GPUWorks", "-n", Namespace, "-s", w[0].Signature)
			assert.Error(t, err, out)
			out, err = sshKeygen(t, append(msg, ' '), "-Y", "verify", "-f", allowedFile, "-I", "VoltSkid", "-n", Namespace, "-s", w[0].Signature)
			assert.Error(t, err, out)
		})
	}
}

func TestSSHKeygenSignaturesVerifyWithContractc(t *testing.T) {
	for _, kt := range keyTypes {
		t.Run(kt.name, func(t *testing.T) {
			keys := t.TempDir()
			key := keygen(t, keys, kt.args)
			allowed, err := ReadAllowedSigners(writeAllowed(t, keys, "VoltSkid", key+".pub"))
			require.NoError(t, err)

			dir := copyDir(t, example)
			w, err := Prepare(load(t, dir), Request{Party: "VoltSkid", Boundary: "p1-ma", Now: now})
			require.NoError(t, err)
			require.Empty(t, w[0].Signature)
			out, err := sshKeygen(t, nil, "-Y", "sign", "-f", key, "-n", Namespace, w[0].Statement)
			require.NoError(t, err, out)

			r, err := Verify(load(t, dir), allowed, "p1-ma", now)
			require.NoError(t, err)
			got := r.Boundaries[0].Parties[0]
			assert.Equal(t, StatusSigned, got.Status, got.Detail)
			pub, err := os.ReadFile(key + ".pub")
			require.NoError(t, err)
			pk, _, _, _, err := ssh.ParseAuthorizedKey(pub)
			require.NoError(t, err)
			assert.Equal(t, ssh.FingerprintSHA256(pk), got.Key)

			// a signature ssh-keygen made in another namespace does not count
			require.NoError(t, os.Remove(w[0].Statement+".sig"))
			out, err = sshKeygen(t, nil, "-Y", "sign", "-f", key, "-n", "file", w[0].Statement)
			require.NoError(t, err, out)
			r, err = Verify(load(t, dir), allowed, "p1-ma", now)
			require.NoError(t, err)
			assert.Equal(t, StatusInvalid, r.Boundaries[0].Parties[0].Status)
			assert.Contains(t, r.Boundaries[0].Parties[0].Detail, `namespace "file"`)
		})
	}
}

func TestEncryptedKeyNeedsPassphrase(t *testing.T) {
	keys := t.TempDir()
	key := filepath.Join(keys, "key")
	out, err := sshKeygen(t, nil, "-q", "-t", "ed25519", "-N", "s3cret", "-f", key)
	require.NoError(t, err, out)
	_, err = LoadSigner(key, nil)
	require.ErrorContains(t, err, "is encrypted")
	_, err = LoadSigner(key, []byte("wrong"))
	require.Error(t, err)
	s, err := LoadSigner(key, []byte("s3cret"))
	require.NoError(t, err)
	assert.Equal(t, "ssh-ed25519", s.PublicKey().Type())
}
