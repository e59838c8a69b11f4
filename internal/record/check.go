package record

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/evidence"
)

// Options are how Check reads the bundles.
type Options struct {
	// Trusted keys: only their signatures count, and they must cover
	// everything (sat verify --trust); nil, any signature that is there
	// must verify.
	Trusted []ssh.PublicKey
	// TimeStampRoots: every stamp of a seal must verify against them.
	TimeStampRoots *x509.CertPool
	// Root relocates the bundles (sat verify --bundles-root): see Locate.
	Root string
}

// Locate is where the bundle recorded at dir is looked for. The store
// keeps dir as it was given on the command line, so a relative dir is
// relative to where that command ran: it is read from the current
// directory, or, with root, from root. With root, an absolute dir is
// looked for by its last element in root (the bundles copied there).
func Locate(dir, root string) string {
	switch {
	case root == "":
		return dir
	case filepath.IsAbs(dir):
		return filepath.Join(root, filepath.Base(dir))
	}
	return filepath.Join(root, dir)
}

// Result is one bundle of the record as Check found it.
type Result struct {
	Bundle Bundle
	Path   string           // where it was looked for
	Report *evidence.Report // nil: no bundle could be read there
	// Problems say, each naming the bundle and its dir, why it is not
	// the bundle the record names, intact.
	Problems []string
}

// OK reports whether the bundle is the one recorded, intact.
func (r *Result) OK() bool { return len(r.Problems) == 0 }

// Check reads every bundle the record names, where Locate puts it: it
// must be there, verify (evidence.Audit, with the options' keys and
// roots), and be the bundle the record names (its id and manifest
// digest), still holding the journal record it was recorded at.
func Check(r *Record, opt Options) []Result {
	out := make([]Result, len(r.Bundles))
	for i, b := range r.Bundles {
		out[i] = CheckBundle(b, opt)
	}
	return out
}

// CheckBundle checks one bundle of a record.
func CheckBundle(b Bundle, opt Options) Result {
	res := Result{Bundle: b, Path: Locate(b.Dir, opt.Root)}
	where := b.Dir
	if res.Path != b.Dir {
		where = fmt.Sprintf("%s (looked for at %s)", b.Dir, res.Path)
	}
	problem := func(format string, args ...any) {
		res.Problems = append(res.Problems, fmt.Sprintf("bundle %s at %s: ", b.ID, where)+fmt.Sprintf(format, args...))
	}
	if _, err := os.Stat(res.Path); err != nil {
		problem("missing: %v", unwrapPath(err))
		return res
	}
	rep, err := evidence.Audit(res.Path, evidence.AuditOptions{Trusted: opt.Trusted, TimeStampRoots: opt.TimeStampRoots})
	if err != nil {
		problem("not an evidence bundle: %v", err)
		return res
	}
	res.Report = rep
	switch {
	case rep.Bundle != b.ID:
		problem("swapped: the directory holds bundle %s (manifest %s), not bundle %s (manifest %s) the record names", orNone(rep.Bundle), orNone(rep.ManifestDigest), b.ID, b.Manifest)
	case rep.ManifestDigest != b.Manifest:
		problem("its manifest is %s, the record's %s: the manifest was changed, or the run is not the one recorded", orNone(rep.ManifestDigest), b.Manifest)
	case !holdsHead(res.Path, b.Head):
		problem("its journal no longer holds record %s, its head when it was recorded: it was cut back (an amendment removed)", b.Head)
	}
	if !rep.OK() {
		all := rep.All()
		more := ""
		if len(all) > 3 {
			all, more = all[:3], fmt.Sprintf(" (and %d more)", len(all)-3)
		}
		problem("does not verify: %s%s", strings.Join(all, "; "), more)
	}
	return res
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// holdsHead reports whether the bundle's journal has a record whose
// hash is head (the chain itself is Audit's to check).
func holdsHead(dir, head string) bool {
	if head == "" {
		return true
	}
	f, err := os.Open(filepath.Join(dir, evidence.JournalFile))
	if err != nil {
		return false
	}
	defer f.Close()
	suffix := []byte(`,"hash":"` + head + `"}`)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), evidence.MaxRecord+1)
	for sc.Scan() {
		if bytes.HasSuffix(sc.Bytes(), suffix) {
			return true
		}
	}
	return false
}

// Signatures are a bundle's signers as an audit found them: one per
// key, role and name, with the time of its last signature.
func Signatures(rep *evidence.Report) []Signature {
	var out []Signature
	for _, s := range rep.Signatures {
		if s.Key == "" {
			continue
		}
		i := slices.IndexFunc(out, func(o Signature) bool { return o.Key == s.Key && o.Role == s.Role && o.By == s.By })
		if i < 0 {
			out = append(out, Signature{Role: s.Role, By: s.By, Key: s.Key, At: s.At.UTC()})
			continue
		}
		if s.At.After(out[i].At) {
			out[i].At = s.At.UTC()
		}
	}
	slices.SortStableFunc(out, func(a, b Signature) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.Role+a.Key, b.Role+b.Key)
	})
	return out
}

// AddSignatures fills each bundle's signatures from the results of
// Check that read it.
func (r *Record) AddSignatures(results []Result) {
	for _, res := range results {
		if res.Report == nil || !res.OK() {
			continue
		}
		for i := range r.Bundles {
			if b := &r.Bundles[i]; b.ID == res.Bundle.ID && b.Dir == res.Bundle.Dir {
				b.Signatures = Signatures(res.Report)
			}
		}
	}
}
