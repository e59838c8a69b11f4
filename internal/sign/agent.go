package sign

import (
	"bytes"
	"errors"
	"fmt"
	"net"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// AgentSigner finds pub among the keys of the ssh-agent at
// SSH_AUTH_SOCK (as lookupEnv has it): how a hardware key signs. The
// connection stays open while the process lives.
func AgentSigner(pub ssh.PublicKey, lookupEnv func(string) (string, bool)) (ssh.Signer, error) {
	sock, ok := lookupEnv("SSH_AUTH_SOCK")
	if !ok || sock == "" {
		return nil, errors.New("SSH_AUTH_SOCK is not set (start ssh-agent and ssh-add the key, or give the private key file)")
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("ssh-agent at %s: %w", sock, err)
	}
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh-agent at %s: %w", sock, err)
	}
	for _, s := range signers {
		if bytes.Equal(s.PublicKey().Marshal(), pub.Marshal()) {
			return s, nil
		}
	}
	conn.Close()
	return nil, fmt.Errorf("ssh-agent at %s does not hold %s (ssh-add it)", sock, ssh.FingerprintSHA256(pub))
}
