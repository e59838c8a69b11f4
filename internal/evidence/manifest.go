package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Namespace is the SSHSIG namespace of manifest signatures, so that a
// signature over evidence can never pass for a contract signature.
const Namespace = "seam-evidence"

// KindRunEnd is the last record of a finished run; it carries the Meta
// that the manifest repeats, so the manifest cannot be edited unnoticed.
const KindRunEnd = "run_end"

// FormatVersion is the bundle format.
const FormatVersion = "seam-evidence/v1"

// Meta is what the runner knows about the run's inputs.
type Meta struct {
	ToolVersion     string `json:"tool_version"`
	PlanDigest      string `json:"plan_digest"`
	ContractsDigest string `json:"contracts_digest,omitempty"`
	BindingDigest   string `json:"binding_digest,omitempty"` // of the binding without secrets
	Outcome         string `json:"outcome"`                  // passed, failed, aborted, error
}

// Manifest lists the digest of every file of a finished bundle.
type Manifest struct {
	Format string `json:"format"`
	Meta
	Records     int64             `json:"records"`
	JournalHead string            `json:"journal_head"`
	Files       map[string]string `json:"files"`
}

// Finish closes the bundle and writes manifest.json; with a signer it
// also writes manifest.json.sig, an SSHSIG that `ssh-keygen -Y verify -n
// seam-evidence` accepts.
func (b *Bundle) Finish(meta Meta, signer ssh.Signer) (*Manifest, error) {
	if _, err := b.Append(KindRunEnd, "", meta); err != nil {
		return nil, err
	}
	if err := b.Close(); err != nil {
		return nil, err
	}
	m := &Manifest{Format: FormatVersion, Meta: meta, Records: b.seq, JournalHead: b.prev, Files: map[string]string{}}
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == ManifestFile || e.Name() == SignatureFile {
			continue
		}
		d, err := fileDigest(filepath.Join(b.dir, e.Name()))
		if err != nil {
			return nil, err
		}
		m.Files[e.Name()] = d
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	raw = append(raw, '\n')
	if err := os.WriteFile(filepath.Join(b.dir, ManifestFile), raw, 0o644); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	if signer == nil {
		return m, nil
	}
	sig, err := sshsig.Sign(bytes.NewReader(raw), signer, sshsig.HashSHA512, Namespace)
	if err != nil {
		return nil, fmt.Errorf("evidence: signing the manifest: %w", err)
	}
	return m, os.WriteFile(filepath.Join(b.dir, SignatureFile), sshsig.Armor(sig), 0o644)
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return digestOf(h), nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
