package report

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// PlanFile is the copy of the plan that a bundle carries.
const PlanFile = "plan.json"

// bundle is what a report reads from an evidence bundle besides the
// samples.
type bundle struct {
	verify         evidence.Report
	results        *results.Results
	plan           *plan.Plan
	spans          map[string]span // by case id
	gradeOptions   grade.Options
	manifestDigest string // "" when the run did not finish
}

func (b *bundle) planCase(id string) *plan.Case {
	for i := range b.plan.Cases {
		if b.plan.Cases[i].ID == id {
			return &b.plan.Cases[i]
		}
	}
	return nil
}

// readBundle verifies the bundle and reads its results, plan and
// journal. Problems that leave the bundle readable (an altered file, a
// bad signature) are in verify.Problems; an error means there is nothing
// to report on.
func readBundle(dir string, trusted []ssh.PublicKey) (*bundle, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("evidence bundle %s: not a directory", dir)
	}
	rep, err := evidence.Verify(dir, trusted)
	if err != nil {
		return nil, err
	}
	b := &bundle{verify: rep}
	if raw, err := os.ReadFile(filepath.Join(dir, evidence.ManifestFile)); err == nil {
		sum := sha256.Sum256(raw)
		b.manifestDigest = "sha256:" + hex.EncodeToString(sum[:])
	}
	if b.results, err = results.Read(filepath.Join(dir, evidence.ResultsFile)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("evidence bundle %s has no %s: the run did not finish (resume it with sat run --resume %s)", dir, evidence.ResultsFile, dir)
		}
		return nil, err
	}
	if b.plan, err = readPlan(dir, b.results.Plan.Digest, &b.verify); err != nil {
		return nil, err
	}
	if b.spans, b.gradeOptions, err = readJournal(dir); err != nil {
		return nil, err
	}
	return b, nil
}

// readPlan reads the bundle's copy of the plan; a digest other than the
// one results.json names is an integrity problem, not an error.
func readPlan(dir, digest string, rep *evidence.Report) (*plan.Plan, error) {
	path := filepath.Join(dir, PlanFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("evidence bundle %s: the plan that ran is needed to re-grade: %w", dir, err)
	}
	sum := sha256.Sum256(raw)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: digest %s, but %s says the plan that ran was %s", PlanFile, got, evidence.ResultsFile, digest))
	}
	p, err := plan.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// caseEnd is the part of a case_end journal record (written by
// internal/runner) that a report needs: how the case ran, and which
// bytes of samples.csv it wrote.
type caseEnd struct {
	Timeline *grade.Timeline `json:"timeline"`
	Samples  [2]int64        `json:"samples"`
}

// span is what a case needs to be re-graded.
type span struct {
	tl *grade.Timeline
	// from, to is the byte range of samples.csv the case wrote; both 0
	// when the record does not say, and then the timeline's start and
	// end choose the samples.
	from, to int64
}

// readJournal collects each case's timeline and samples from its
// case_end record. The chain itself is evidence.Verify's job.
func readJournal(dir string) (map[string]span, grade.Options, error) {
	path := filepath.Join(dir, evidence.JournalFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, grade.Options{}, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	out := map[string]span{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var r evidence.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // a torn last line; Verify reports it
		}
		if r.Kind != "case_end" || r.Case == "" {
			continue
		}
		var ce caseEnd
		if err := json.Unmarshal(r.Data, &ce); err != nil {
			return nil, grade.Options{}, fmt.Errorf("%s line %d: case_end of %s: %w", path, line, r.Case, err)
		}
		if ce.Timeline != nil {
			out[r.Case] = span{ce.Timeline, ce.Samples[0], ce.Samples[1]}
		}
	}
	return out, grade.Options{}, sc.Err()
}
