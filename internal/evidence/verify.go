package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Report is what `sat verify` found.
type Report struct {
	Records  int
	Cases    int // completed cases
	Complete bool
	// Unverified counts sample bytes after the last checkpoint of an
	// unfinished run: at most the last second before a crash.
	Unverified int64
	Signed     bool
	SignedBy   string // key fingerprint
	Problems   []string
}

// OK reports whether nothing is wrong.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Verify checks a bundle: the journal's chain, the samples against every
// checkpoint, and for a finished run the manifest's digests and, if
// present, its signature. trusted, if not nil, is the set of keys
// allowed to sign (an empty set accepts any valid signature).
func Verify(dir string, trusted []ssh.PublicKey) (Report, error) {
	var rep Report
	records, _, partial, err := readJournal(filepath.Join(dir, JournalFile))
	var chain *ChainError
	switch {
	case errors.As(err, &chain):
		rep.Problems = append(rep.Problems, chain.Error())
	case err != nil:
		return rep, fmt.Errorf("verify %s: %w", dir, err)
	}
	rep.Records = len(records)
	for _, r := range records {
		if r.Kind == "case_end" {
			rep.Cases++
		}
	}
	rep.Unverified = verifySamples(dir, records, &rep)
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return rep, nil // an unfinished run: verified up to its last checkpoint
	}
	if err != nil {
		return rep, err
	}
	rep.Complete = true
	if partial > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s ends in a half-written record after the run finished", JournalFile))
	}
	verifyManifest(dir, raw, records, &rep)
	verifySignature(dir, raw, trusted, &rep)
	return rep, nil
}

// verifySamples streams samples.csv once, checking the running digest at
// every checkpoint; it returns the bytes after the last one.
func verifySamples(dir string, records []Record, rep *Report) int64 {
	f, err := os.Open(filepath.Join(dir, SamplesFile))
	if err != nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %v", SamplesFile, err))
		return 0
	}
	defer f.Close()
	h := sha256.New()
	var read int64
	for _, r := range records {
		if r.Kind != KindCheckpoint {
			continue
		}
		var cp Checkpoint
		if err := json.Unmarshal(r.Data, &cp); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("checkpoint record %d: %v", r.Seq, err))
			return 0
		}
		n, _ := io.CopyN(h, f, cp.SamplesBytes-read)
		read += n
		if read < cp.SamplesBytes {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s is %d bytes long but record %d checkpointed %d: samples were removed", SamplesFile, read, r.Seq, cp.SamplesBytes))
			return 0
		}
		if got := digestOf(h); got != cp.SamplesDigest {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s bytes 0..%d do not match checkpoint record %d: samples were altered", SamplesFile, cp.SamplesBytes, r.Seq))
			return 0
		}
	}
	rest, _ := io.Copy(io.Discard, f)
	return rest
}

func verifyManifest(dir string, raw []byte, records []Record, rep *Report) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %v", ManifestFile, err))
		return
	}
	if again, _ := json.MarshalIndent(m, "", "  "); !bytes.Equal(append(again, '\n'), raw) {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: not as sat wrote it: the file was edited", ManifestFile))
	}
	if m.Format != FormatVersion {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: format %q, this sat reads %q", ManifestFile, m.Format, FormatVersion))
	}
	n := len(records)
	if n == 0 || records[n-1].Hash != m.JournalHead || int64(n) != m.Records {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: the journal's head is not the one the manifest recorded (%d records, head %s): records were added or removed", ManifestFile, m.Records, m.JournalHead))
		return
	}
	var end *Record
	for i := n - 1; i >= 0 && end == nil; i-- {
		if records[i].Kind == KindRunEnd {
			end = &records[i]
		}
	}
	if want, _ := json.Marshal(m.Meta); end == nil || !bytes.Equal(canonicalJSON(end.Data), canonicalJSON(want)) {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: its run details differ from the journal's run_end record: the manifest was edited", ManifestFile))
	}
	for _, name := range sortedKeys(m.Files) {
		got, err := fileDigest(filepath.Join(dir, name))
		switch {
		case err != nil:
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: listed in the manifest but %v", name, err))
		case got != m.Files[name]:
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: digest %s, the manifest says %s: the file was altered", name, got, m.Files[name]))
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, ok := m.Files[e.Name()]; !ok && !e.IsDir() && e.Name() != ManifestFile && e.Name() != SignatureFile {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: not listed in the manifest: added after the run", e.Name()))
		}
	}
}

func verifySignature(dir string, manifest []byte, trusted []ssh.PublicKey, rep *Report) {
	armored, err := os.ReadFile(filepath.Join(dir, SignatureFile))
	if errors.Is(err, os.ErrNotExist) {
		if trusted != nil {
			rep.Problems = append(rep.Problems, "the manifest is not signed, but a signature was required")
		}
		return
	}
	sig, err := sshsig.Unarmor(armored)
	if err != nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %v", SignatureFile, err))
		return
	}
	if err := sshsig.Verify(bytes.NewReader(manifest), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: does not verify over %s in namespace %s: %v", SignatureFile, ManifestFile, Namespace, err))
		return
	}
	rep.Signed, rep.SignedBy = true, ssh.FingerprintSHA256(sig.PublicKey)
	if len(trusted) == 0 {
		return
	}
	for _, k := range trusted {
		if bytes.Equal(k.Marshal(), sig.PublicKey.Marshal()) {
			return
		}
	}
	rep.Problems = append(rep.Problems, fmt.Sprintf("%s: signed by %s, which is not among the trusted keys", SignatureFile, rep.SignedBy))
}

func canonicalJSON(b []byte) []byte {
	var x any
	if json.Unmarshal(b, &x) != nil {
		return b
	}
	out, _ := json.Marshal(x)
	return out
}
