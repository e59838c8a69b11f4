package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Meta is what the runner knows about the run's inputs; the run_end
// record carries it and the manifest repeats it.
type Meta struct {
	ToolVersion     string `json:"tool_version"`
	PlanDigest      string `json:"plan_digest"`
	ContractsDigest string `json:"contracts_digest,omitempty"`
	BindingDigest   string `json:"binding_digest,omitempty"` // of the binding without secrets
	Outcome         string `json:"outcome"`                  // passed, failed, aborted, error
}

// Manifest describes a finished run: the bundle, the journal's head at
// the run's end (which chains every record and, through the last
// checkpoint, the samples), and the digest of every other file then.
// Amendments after the end extend the journal; the manifest never
// changes.
type Manifest struct {
	Format string `json:"format"`
	Bundle string `json:"bundle"`
	Meta
	Records       int64             `json:"records"`
	JournalBytes  int64             `json:"journal_bytes"`
	JournalHead   string            `json:"journal_head"`
	SamplesBytes  int64             `json:"samples_bytes"`
	SamplesDigest string            `json:"samples_digest"`
	Files         map[string]string `json:"files"`
}

func (m *Manifest) encode() []byte {
	raw, _ := json.MarshalIndent(m, "", "  ")
	return append(raw, '\n')
}

// Finish ends the run: a run_end record with meta, a last seal, then
// manifest.json and, for a signed bundle, manifest.json.sig (an SSHSIG
// of the manifest that `ssh-keygen -Y verify -n seam-evidence` accepts).
// The bundle is closed. The order survives a crash at any moment: the
// manifest is written to a temporary file before run_end is durable, and
// renamed into place after; a crash in between leaves it there, and
// Resume puts it in place.
func (b *Bundle) Finish(meta Meta) (*Manifest, error) {
	b.mu.Lock()
	b.deferred = true
	_, err := b.appendLocked(KindRunEnd, "", meta)
	if err == nil {
		err = b.checkpointLocked()
		b.dirty = false
	}
	cp := b.cp
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if b.opt.Signer != nil {
		st := Statement{Type: StatementType, Bundle: b.id, Seq: cp.seq, Head: cp.hash, SamplesBytes: cp.bytes, SamplesDigest: cp.dig,
			Role: RoleRun, By: b.opt.By, At: b.clock.Now().UTC()}
		data, _, err := sign(b.opt.Signer, st)
		if err != nil {
			return nil, err
		}
		b.mu.Lock()
		r, err := b.appendLocked(KindSeal, "", data)
		if err == nil {
			b.sealedLocked(r.Seq, data.Statement)
		}
		b.mu.Unlock()
		if err != nil {
			return nil, err
		}
		b.stampLast() // the last seal's stamp, before the manifest counts the records
	}
	b.mu.Lock()
	b.stopStampsLocked()
	st, err := b.journal.Stat()
	size := int64(0)
	if err == nil {
		size = st.Size() + int64(b.jw.Buffered())
	}
	m := &Manifest{Format: FormatVersion, Bundle: b.id, Meta: meta, Records: b.seq, JournalBytes: size, JournalHead: b.prev,
		SamplesBytes: cp.bytes, SamplesDigest: cp.dig, Files: map[string]string{}}
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := b.manifestFiles(m); err != nil {
		return nil, err
	}
	raw := m.encode()
	mpath, spath := filepath.Join(b.dir, ManifestFile), filepath.Join(b.dir, SignatureFile)
	if err := writeBytesSynced(tmpPath(mpath), raw); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	if b.opt.Signer != nil {
		sig, err := b.opt.Signer.Sign(raw)
		if err != nil {
			return nil, fmt.Errorf("evidence: signing the manifest: %w", err)
		}
		if err := writeBytesSynced(tmpPath(spath), sig); err != nil {
			return nil, fmt.Errorf("evidence: %w", err)
		}
	}
	b.mu.Lock()
	err = errors.Join(b.flushLocked(), b.journal.Close(), b.samples.Close())
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := placePending(b.dir); err != nil {
		return nil, err
	}
	return m, nil
}

// manifestFiles lists the digest of every file the manifest covers.
func (b *Bundle) manifestFiles(m *Manifest) error {
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !inManifest(e.Name()) {
			continue
		}
		d, err := fileDigest(b.dir, e.Name())
		if err != nil {
			return err
		}
		m.Files[e.Name()] = d
	}
	return nil
}

// placePending renames a manifest and its signature written before the
// run's end was durable into place: the signature first, so that a
// manifest is never in place without the signature it had.
func placePending(dir string) error {
	for _, name := range []string{SignatureFile, ManifestFile} {
		path := filepath.Join(dir, name)
		if _, err := os.Lstat(tmpPath(path)); err != nil {
			continue
		}
		if err := os.Rename(tmpPath(path), path); err != nil {
			return fmt.Errorf("evidence: %w", err)
		}
	}
	return syncDir(dir)
}

// inManifest says whether a top-level file's digest goes into the
// manifest: everything but the journal and samples (the head and the
// checkpoint cover them) and the manifest and its signature.
func inManifest(name string) bool {
	switch name {
	case JournalFile, SamplesFile, ManifestFile, SignatureFile:
		return false
	}
	return name[0] != '.'
}

// parseManifest reads manifest.json strictly: no unknown fields, and
// exactly the bytes sat writes for it.
func parseManifest(raw []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		var f struct{ Format string }
		if json.Unmarshal(raw, &f) == nil && f.Format != "" && !readFormat(f.Format) {
			return nil, fmt.Errorf("format %q, this sat reads %q (and %q)", f.Format, FormatVersion, FormatV2)
		}
		return nil, err
	}
	if !readFormat(m.Format) {
		return nil, fmt.Errorf("format %q, this sat reads %q (and %q)", m.Format, FormatVersion, FormatV2)
	}
	if !bytes.Equal(m.encode(), raw) {
		return &m, errors.New("not as sat wrote it: the file was edited")
	}
	return &m, nil
}

// readFormat reports whether sat reads a bundle of format f. A v2
// manifest is the same as a v3 one but for its format.
func readFormat(f string) bool { return f == FormatVersion || f == FormatV2 }

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
