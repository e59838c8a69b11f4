package satcmd

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/record"
	"github.com/seamdc/seam/internal/tsa"
)

func init() {
	register("verify", "check an evidence bundle (chain, samples, files, signatures, verdicts), or every bundle a handover record names", runVerify).
		WithExample("sat verify out/run1")
}

const verifyHelp = `Checks an evidence bundle written by sat run, with the one reader sat
report uses too (internal/evidence): the journal's hash chain over the
exact bytes written, the samples against every checkpoint, every file
against the journal's record of it, every seal and signature, the
manifest of a finished run, results.json against its schema and the
journal, every signed amendment after the run, and every verdict
re-graded from the raw samples. The first line says whether the bundle
is signed, by whom, and up to where.

Without --trust, a signature that is there must verify, and an
unfinished run (killed, aborted) verifies up to its last checkpoint;
an unsigned bundle verifies too, but its hashes only show it was not
damaged by accident. With --trust KEYS (authorized_keys format: the
run's engineer, the witness, whoever signs), everything must be covered
by a trusted signature: a run cut short, a tail after the last seal, a
missing manifest or an untrusted amendment is a problem.

What nothing inside a bundle can show is a tail cut off: the journal
truncated back to before an amendment (a failing capture attached, a
sign-off) and its attachments removed verifies, and with --trust too.
--head-out FILE writes the bundle's head (its id, the number of records,
the last one's hash and time, who sealed it last), only for a bundle
that verifies; keep it outside the bundle (another machine, the site's
document system). --anchor FILE then finds a bundle that no longer holds
that record, or holds it rewritten, or is another bundle. Without
--anchor, verify says up to which record it can prove nothing was cut.

Given a handover record (the directory sat record wrote, or its
record.json) it checks every bundle the record names instead: each must
be at the directory it was recorded from (a relative one read from the
current directory, or from --bundles-root DIR; an absolute one by its
last element there), verify as above, and be the bundle recorded: the
same id and manifest digest, still holding the journal record it was
recorded at. A bundle missing, changed, cut back or swapped for another
is named, with its directory and both digests. record.json.sig, when it
is there, must verify (by a key of --trust, when given).

Exit codes: 0 intact, 2 problems found, 1 the bundle or record cannot be read.`

func runVerify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR|RECORD [--trust authorized_keys] [--anchor FILE] [--head-out FILE] [--time-stamp-roots FILE] [--bundles-root DIR]", flag.ContinueOnError)
	trust := fs.String("trust", "", "a file of SSH public keys (authorized_keys format): only their signatures count, and they must cover everything")
	anchorFile := fs.String("anchor", "", "a head of this bundle kept outside it (what --head-out wrote): the bundle must still hold it, as it was")
	headOut := fs.String("head-out", "", "write the bundle's head to this file, if it verifies, to keep outside the bundle")
	stampRoots := fs.String("time-stamp-roots", "", "the PEM root certificate(s) of the time-stamping authority the site trusts: every stamp of a seal must verify against them")
	bundlesRoot := fs.String("bundles-root", "", "a handover record's bundles are here: a relative recorded directory under it, an absolute one by its last element")
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = cli.Usagef("want one evidence directory, got %d arguments", len(pos))
	}
	isRec := err == nil && isRecord(pos[0])
	switch {
	case err != nil:
	case isRec && (*anchorFile != "" || *headOut != ""):
		err = cli.Usagef("--anchor and --head-out are a bundle's: %s is a handover record", pos[0])
	case !isRec && *bundlesRoot != "":
		err = cli.Usagef("--bundles-root is for a handover record, and %s is not one", pos[0])
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, verifyHelp)
		}
		return fail(stderr, "verify", fs, err)
	}
	dir := pos[0]
	var keys []ssh.PublicKey
	if *trust != "" {
		if keys, err = readKeys(*trust); err != nil {
			return fail(stderr, "verify", fs, err)
		}
	}
	var anchor *evidence.Anchor
	if *anchorFile != "" {
		if anchor, err = evidence.ReadAnchor(*anchorFile); err != nil {
			return fail(stderr, "verify", fs, err)
		}
	}
	var roots *x509.CertPool
	if *stampRoots != "" {
		raw, err := os.ReadFile(*stampRoots)
		if err != nil {
			return fail(stderr, "verify", fs, fmt.Errorf("--time-stamp-roots: %w", err))
		}
		if roots, err = tsa.ParseRoots("--time-stamp-roots "+*stampRoots, raw); err != nil {
			return fail(stderr, "verify", fs, err)
		}
	}
	if isRec {
		code, err := verifyRecord(stdout, dir, record.Options{Trusted: keys, TimeStampRoots: roots, Root: *bundlesRoot})
		if err != nil {
			return fail(stderr, "verify", fs, err)
		}
		return code
	}
	rep, err := evidence.Audit(dir, evidence.AuditOptions{Trusted: keys, Anchor: anchor, TimeStampRoots: roots})
	if err != nil {
		return fail(stderr, "verify", fs, err)
	}
	printAudit(stdout, rep)
	if line := rep.StampLine(roots != nil); line != "" {
		fmt.Fprintln(stdout, line)
	}
	printAnchor(stdout, rep, anchor, dir)
	if problems := rep.All(); len(problems) > 0 {
		fmt.Fprintf(stdout, "FAILED: %d problem(s):\n", len(problems))
		for _, p := range problems {
			fmt.Fprintf(stdout, "  %s\n", p)
		}
		if *headOut != "" {
			fmt.Fprintf(stdout, "head: not written to %s: the bundle does not verify\n", *headOut)
		}
		return cli.ExitFindings
	}
	if *headOut != "" {
		if err := writeHead(stdout, rep, *headOut); err != nil {
			return fail(stderr, "verify", fs, err)
		}
	}
	fmt.Fprintf(stdout, "OK: %s is intact\n", dir)
	return cli.ExitOK
}

// printAnchor says what the anchor proves, or, without one, how far
// the bundle can prove nothing was cut off its end.
func printAnchor(w io.Writer, rep *evidence.Report, a *evidence.Anchor, dir string) {
	switch {
	case rep.Records == 0:
	case a == nil:
		fmt.Fprintf(w, "anchor: none: anything after record %d (%s) could have been cut off unseen; keep the head outside the bundle (%s) and give it with --anchor FILE\n",
			rep.Records, rep.HeadAt.UTC().Format("2006-01-02T15:04:05Z"), headCommand(dir))
	case rep.OK():
		fmt.Fprintf(w, "anchor: record %d, the head anchored at %s, is held as it was; %d record(s) after it\n", a.Records, a.When(), int64(rep.Records)-a.Records)
	}
}

// writeHead writes the head of a bundle that verifies to path.
func writeHead(w io.Writer, rep *evidence.Report, path string) error {
	head, err := rep.Head()
	if err != nil {
		return err
	}
	if err := evidence.WriteAnchor(path, head); err != nil {
		return err
	}
	fmt.Fprintf(w, "head: record %d of bundle %s (%s) written to %s: keep it outside the bundle, and give it to sat verify --anchor\n", head.Records, head.Bundle, shortDigest(head.Hash), path)
	return nil
}

// keepHead says how to keep a bundle's new head outside it: sat run,
// sign-off and attach print it after they seal.
func keepHead(w io.Writer, dir string) {
	fmt.Fprintf(w, "keep the new head outside the bundle, so that sat verify --anchor finds a tail cut off: %s\n", headCommand(dir))
}

// headCommand is the command that keeps dir's head outside it.
func headCommand(dir string) string {
	return "sat verify " + shellWord(dir) + " --head-out FILE"
}

// printAudit writes what an audit found, first whether the bundle is
// signed, by whom and up to where.
func printAudit(w io.Writer, rep *evidence.Report) {
	fmt.Fprintln(w, rep.Describe())
	again := 0
	for _, ac := range rep.CaseAudits {
		if ac.Attempt > 1 {
			again++
		}
	}
	if again > 0 {
		more := "1 more attempt"
		if again > 1 {
			more = fmt.Sprintf("%d more attempts", again)
		}
		fmt.Fprintf(w, "journal: %d records, %d cases completed, %d of them again (%s)\n", rep.Records, rep.Cases-again, len(attemptedAgain(rep)), more)
	} else {
		fmt.Fprintf(w, "journal: %d records, %d cases completed\n", rep.Records, rep.Cases)
	}
	switch {
	case rep.Complete && rep.Manifest != nil:
		fmt.Fprintln(w, "run: finished (manifest present)")
	case rep.Complete:
		fmt.Fprintln(w, "run: finished (run_end recorded), but its manifest is missing")
	case rep.Stopped:
		fmt.Fprintf(w, "run: stopped before its end (results recorded, no run_end): resumable; %d sample bytes after its last checkpoint are unverified\n", rep.Unverified)
	default:
		fmt.Fprintf(w, "run: not finished (no manifest): verified up to its last checkpoint; %d sample bytes after it are unverified\n", rep.Unverified)
	}
	printSignatures(w, rep)
	for _, s := range rep.Segments {
		fmt.Fprintf(w, "amendment %d (records %d–%d): %s (%s) by %s", s.N, s.First, s.Last, s.Purpose, s.Role, s.By)
		if s.Seal != nil {
			fmt.Fprintf(w, ", key %s, %s", s.Seal.Key, s.Seal.At.UTC().Format("2006-01-02T15:04:05Z"))
		}
		if s.Note != "" {
			fmt.Fprintf(w, ": %q", s.Note)
		}
		fmt.Fprintf(w, "; signs manifest %s", shortDigest(s.Manifest))
		for _, ac := range rep.CaseAudits {
			if ac.Segment == s.N {
				fmt.Fprintf(w, "; runs case %s again: attempt %d, %s", ac.End.Result.ID, ac.Attempt, ac.End.Result.Outcome)
			}
		}
		if adds := s.AddsText(); adds != "" {
			fmt.Fprintf(w, "; adds %s", adds)
		}
		fmt.Fprintln(w)
	}
	for _, c := range rep.Captures {
		fmt.Fprintf(w, "capture %s of %s: %s, the %s mask on %s", c.Files[0], c.Case, c.Result.Verdict.Outcome, c.Mask, c.Channel)
		if c.Result.Verdict.Outcome != grade.Error {
			fmt.Fprintf(w, ", the analyser's clock offset %+.3f s", c.Result.Align.OffsetS)
		}
		if d := c.Result.Verdict.Detail; d != "" {
			fmt.Fprintf(w, ": %s", d)
		}
		fmt.Fprintln(w)
	}
	if len(rep.Retried) > 0 || len(rep.FailedByCapture) > 0 {
		var by []string
		if len(rep.Retried) > 0 {
			by = append(by, "the retries of "+strings.Join(rep.Retried, ", "))
		}
		if len(rep.FailedByCapture) > 0 {
			by = append(by, "the failing captures of "+strings.Join(rep.FailedByCapture, ", "))
		}
		fmt.Fprintf(w, "results: %s with %s (results.json, signed with the run, says %s)\n", rep.Results.Outcome, strings.Join(by, " and "), recordedOutcome(rep))
	}
	if rep.Regraded > 0 {
		fmt.Fprintf(w, "verdicts: %d checks of %d cases re-graded from the raw samples\n", rep.Checks, rep.Regraded)
	}
	if l := levelsLine(rep); l != "" {
		fmt.Fprintln(w, l)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// levelsLine counts the results' cases by commissioning level, as the
// plan tags them: "levels: L3 functional 6 passed; L4 performance 2
// passed, 1 failed" ("" without results).
func levelsLine(rep *evidence.Report) string {
	if rep.Results == nil || rep.Plan == nil {
		return ""
	}
	rules := rep.Plan.CommissioningRules()
	counts := map[string]map[grade.Outcome]int{}
	for _, c := range rep.Results.Cases {
		pc := rep.Plan.Case(c.ID)
		if pc == nil {
			continue
		}
		l := rules.LevelOf(pc)
		if counts[l] == nil {
			counts[l] = map[grade.Outcome]int{}
		}
		counts[l][c.Outcome]++
	}
	var parts []string
	for _, lv := range rules.Levels {
		n := counts[lv.ID]
		if n == nil {
			continue
		}
		var by []string
		for _, o := range []grade.Outcome{grade.Pass, grade.Fail, grade.Error, grade.Aborted, grade.Skipped} {
			if n[o] > 0 {
				by = append(by, fmt.Sprintf("%d %s", n[o], outcomeWord(o)))
			}
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", lv.ID, lv.Name, strings.Join(by, ", ")))
	}
	if len(parts) == 0 {
		return ""
	}
	return "levels: " + strings.Join(parts, "; ")
}

func outcomeWord(o grade.Outcome) string {
	switch o {
	case grade.Pass:
		return "passed"
	case grade.Fail:
		return "failed"
	case grade.Error:
		return "errors"
	case grade.Aborted:
		return "aborted"
	}
	return "skipped"
}

// attemptedAgain lists the cases with more than one attempt.
func attemptedAgain(rep *evidence.Report) []string {
	var ids []string
	for _, ac := range rep.CaseAudits {
		if ac.Attempt == 2 {
			ids = append(ids, ac.End.Result.ID)
		}
	}
	return ids
}

// recordedOutcome is the outcome the run's own results recorded.
func recordedOutcome(rep *evidence.Report) string {
	if m := rep.Manifest; m != nil {
		return m.Outcome
	}
	return "another outcome"
}

// printSignatures lists the run's seals by key, and the manifest's
// signature.
func printSignatures(w io.Writer, rep *evidence.Report) {
	type group struct {
		key, role, by string
		n             int
		last          int64
		trusted       bool
	}
	groups := map[string]*group{}
	var order []string
	for _, s := range rep.Signatures {
		if s.Segment != 0 || s.Key == "" {
			continue
		}
		id := s.Key + "|" + s.Role + "|" + s.By
		g := groups[id]
		if g == nil {
			g = &group{key: s.Key, role: s.Role, by: s.By, trusted: s.Trusted}
			groups[id] = g
			order = append(order, id)
		}
		g.n++
		g.last = max(g.last, s.Covers)
	}
	sort.Strings(order)
	for _, id := range order {
		g := groups[id]
		what := fmt.Sprintf("%d seal(s)", g.n)
		if g.role == "manifest" {
			what = evidence.SignatureFile
		}
		who := g.key
		if g.by != "" {
			who += " (" + g.by + ")"
		}
		trust := ""
		if !g.trusted {
			trust = ", NOT TRUSTED"
		}
		fmt.Fprintf(w, "signature: %s by %s, covering up to record %d%s\n", what, who, g.last, trust)
	}
	if rep.SealsNotListed > 0 {
		fmt.Fprintf(w, "signature: and %d more seals, not counted above\n", rep.SealsNotListed)
	}
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}
