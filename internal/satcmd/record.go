package satcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/lifecycle/lifecyclecmd"
	"github.com/seamdc/seam/internal/record"
	"github.com/seamdc/seam/internal/version"
)

func init() {
	register("record", "write the handover record of the site's commissioning: every bundle, issue, waiver, gate and contract, from the lifecycle store", runRecord).
		WithExample("sat record --store site.db --out handover --sign-key keys/cx")
	program.NoBudget["record"] = true
}

const recordHelp = `Writes the handover record of the site's commissioning from the
lifecycle store's issues log (internal/record): per module and
commissioning level, every recorded evidence bundle by manifest digest
with its verdict and signatures, every issue with its closure, every
waiver, the level's gate, and every contract the bundles tested with
its signers. --out DIR gets record.json (seam.record/v1), record.html
(printable; with --pdf, record.pdf printed from it by a headless
Chromium) and, with --sign-key, record.json.sig (an SSH signature of
record.json, namespace seam-record).

Every bundle the record names is read first, where the store recorded
it: the directory as given to sat issues open or sat run --lifecycle, a
relative one from the current directory (or from --bundles-root DIR;
an absolute one by its last element there). Each must verify, signed by
the store's evidence keys, and be the bundle recorded; if one is not,
nothing is written. sat verify DIR checks the record the same way later.

Exit codes: 0 written, 2 a bundle it names is missing, broken or
another one (nothing written), 1 the store cannot be read.`

func runRecord(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("--out DIR [--store STORE] [--site NAME] [--sign-key KEY] [--pdf] [--bundles-root DIR]", flag.ContinueOnError)
	store := fs.String("store", storeDefault(), "the lifecycle store: a SQLite file, or postgres://USER@HOST:PORT/DB?sslmode=… ($"+lifecyclecmd.EnvStore+")")
	password := fs.String("db-password", os.Getenv(lifecyclecmd.EnvPassword), "PostgreSQL's password by reference: env:NAME or file:PATH ($"+lifecyclecmd.EnvPassword+")")
	out := fs.String("out", "", "the directory to write the record to")
	site := fs.String("site", "", "the site the record is of: refused if the store is another site's")
	var k keyFlags
	fs.StringVar(&k.key, "sign-key", "", "sign record.json with this SSH key: a private key file, or KEY.pub held by ssh-agent")
	fs.StringVar(&k.passEnv, "passphrase-env", "", "environment variable holding the signing key's passphrase")
	pdf := fs.Bool("pdf", false, "print record.html to record.pdf with a headless Chromium")
	root := fs.String("bundles-root", "", "read the bundles from here instead: a relative recorded directory under it, an absolute one by its last element")
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 0:
		err = cli.Usagef("want no argument, got %d (the store is --store, the record's directory --out)", len(pos))
	case *out == "":
		err = cli.Usagef("give the directory to write the record to: --out DIR")
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, recordHelp)
		}
		return fail(stderr, "record", fs, err)
	}
	browser := ""
	if *pdf {
		if browser = findBrowser(); browser == "" {
			return fail(stderr, "record", fs, fmt.Errorf("a PDF is printed by a headless Chromium, and none is on PATH (%s): install it (Debian: apt-get install chromium) or leave out --pdf", strings.Join(browsers, ", ")))
		}
	}
	rec, keysOf, err := buildRecord(context.Background(), lifecycle.Config{Store: *store, Password: *password, LookupEnv: os.LookupEnv}, *site)
	if err != nil {
		return fail(stderr, "record", fs, err)
	}
	results := record.Check(rec, record.Options{Trusted: keysOf, Root: *root})
	if n := printProblems(stdout, results); n > 0 {
		fmt.Fprintf(stdout, "no record written: %d problem(s) with the bundles it would name; a record is written only of bundles that verify (run it where they were recorded from, or give --bundles-root DIR)\n", n)
		return cli.ExitFindings
	}
	rec.AddSignatures(results)
	return writeRecord(rec, k, *out, browser, stdout, stderr, fs)
}

// storeDefault is the store --store names by default, as sat lifecycle's.
func storeDefault() string {
	if v := os.Getenv(lifecyclecmd.EnvStore); v != "" {
		return v
	}
	return "lifecycle.db"
}

// buildRecord reads the store's issues log and builds its record; it
// returns it with the store's evidence keys, which its bundles'
// signatures must be by.
func buildRecord(ctx context.Context, cfg lifecycle.Config, site string) (*record.Record, []ssh.PublicKey, error) {
	s, err := lifecycle.Open(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	info, err := s.Info(ctx)
	if err != nil {
		return nil, nil, err
	}
	if site != "" && site != info.Site {
		return nil, nil, fmt.Errorf("the lifecycle store %s is of site %q, not %q", s.Name(), info.Site, site)
	}
	pol, _, err := s.Policy(ctx)
	if err != nil {
		return nil, nil, err
	}
	log, err := s.IssuesLog(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	if len(log.Bundles) == 0 {
		return nil, nil, fmt.Errorf("the lifecycle store %s has no bundle recorded in its issues log: record the evidence first (sat issues open --from DIR)", s.Name())
	}
	src := record.Source{Site: info.Site, Store: info.ID, Generated: time.Now(), Tool: version.Version}
	if h, err := s.Head(ctx); err == nil {
		src.StoreHead = &record.StoreHead{Event: h.Head, Hash: h.Hash, At: h.At}
	}
	rec, err := record.Build(src, log)
	return rec, pol.EvidenceKeyList(), err
}

// writeRecord writes the record's files (and the PDF) and says what
// it holds.
func writeRecord(rec *record.Record, k keyFlags, out, browser string, stdout, stderr io.Writer, fs *flag.FlagSet) int {
	var signer ssh.Signer
	if k.key != "" {
		s, err := loadSSHSigner(k, os.LookupEnv)
		if err != nil {
			return fail(stderr, "record", fs, err)
		}
		signer = s
	}
	files, err := record.Write(out, rec, signer)
	if err != nil {
		return fail(stderr, "record", fs, err)
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "%-5s %s (%s)\n", strings.TrimPrefix(filepath.Ext(f.Path), "."), f.Path, size(f.Size))
	}
	if browser != "" {
		if err := printPDF(browser, filepath.Join(out, record.HTMLFile), record.PDFFile, stdout); err != nil {
			return fail(stderr, "record", fs, err)
		}
	}
	printRecordSummary(stdout, rec)
	trust := ""
	if signer != nil {
		trust = " --trust KEYS"
	}
	fmt.Fprintf(stdout, "check it, and the bundles it names, with: sat verify %s%s\n", shellWord(out), trust)
	return cli.ExitOK
}

// printRecordSummary says what the record holds: bundles, issues, and
// each module's gates.
func printRecordSummary(w io.Writer, rec *record.Record) {
	issues, open, waived := 0, 0, 0
	for _, m := range rec.Modules {
		for _, l := range m.Levels {
			for _, is := range l.Issues {
				issues++
				open += btoi(is.Status == lifecycle.IssueOpen)
				waived += btoi(is.Status == lifecycle.IssueWaived)
			}
		}
	}
	fmt.Fprintf(w, "record of site %s: %d bundle(s), %d issue(s) (%d open, %d waived) of %d module(s)\n", rec.Site, len(rec.Bundles), issues, open, waived, len(rec.Modules))
	for _, m := range rec.Modules {
		var gates []string
		for _, l := range m.Levels {
			if l.Gate != nil {
				gates = append(gates, fmt.Sprintf("%s %s", l.ID, passWord(l.Gate.Pass)))
			}
		}
		fmt.Fprintf(w, "  module %s: gates %s\n", m.Name, strings.Join(gates, ", "))
	}
}

func passWord(ok bool) string {
	if ok {
		return "passes"
	}
	return "refuses"
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// printProblems lists the bundles' problems and returns how many.
func printProblems(w io.Writer, results []record.Result) int {
	n := 0
	for _, res := range results {
		for _, p := range res.Problems {
			if n == 0 {
				fmt.Fprintln(w, "problems:")
			}
			fmt.Fprintf(w, "  %s\n", p)
			n++
		}
	}
	return n
}

// isRecord reports whether sat verify's argument is a handover record:
// a file (a bundle is a directory), or a directory with record.json and
// no journal.
func isRecord(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	if !st.IsDir() {
		return true
	}
	_, rerr := os.Stat(filepath.Join(path, record.JSONFile))
	_, jerr := os.Stat(filepath.Join(path, evidence.JournalFile))
	return rerr == nil && errors.Is(jerr, os.ErrNotExist)
}

// verifyRecord is sat verify of a handover record: its signature, when
// it has one, and every bundle it names. It returns the exit code, or
// an error when the record cannot be read.
func verifyRecord(w io.Writer, path string, opt record.Options) (int, error) {
	rec, raw, err := record.Read(path)
	if err != nil {
		return cli.ExitTool, err
	}
	store := ""
	if rec.Store != "" {
		store = " from lifecycle store " + rec.Store
	}
	fmt.Fprintf(w, "record: the handover record of site %s, made %s by sat %s%s: %d bundle(s) of %d module(s)\n",
		rec.Site, rec.Generated.UTC().Format(time.RFC3339), rec.Tool, store, len(rec.Bundles), len(rec.Modules))
	problems := recordSignature(w, filepath.Dir(record.Path(path)), raw, opt)
	for _, res := range record.Check(rec, opt) {
		if res.OK() {
			fmt.Fprintf(w, "bundle %s at %s: the one recorded (manifest %s), intact; %s\n", res.Bundle.ID, res.Bundle.Dir, shortDigest(res.Bundle.Manifest), res.Report.Describe())
		}
		problems = append(problems, res.Problems...)
	}
	if len(problems) > 0 {
		fmt.Fprintf(w, "FAILED: %d problem(s):\n", len(problems))
		for _, p := range problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
		return cli.ExitFindings, nil
	}
	fmt.Fprintf(w, "OK: %s: every bundle it names is at its directory, intact, and the one recorded\n", path)
	return cli.ExitOK, nil
}

// recordSignature checks record.json.sig in dir, when it is there, and
// returns what is wrong with it.
func recordSignature(w io.Writer, dir string, raw []byte, opt record.Options) []string {
	sigPath := filepath.Join(dir, record.SigFile)
	sig, err := os.ReadFile(sigPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(w, "record: not signed (no %s): nothing shows who made it (sat record --sign-key signs it)\n", record.SigFile)
		return nil
	case err != nil:
		return []string{fmt.Sprintf("the record's signature: %v", err)}
	}
	fp, err := record.CheckSignature(raw, sig, opt.Trusted)
	if err != nil {
		return []string{"the record's signature: " + err.Error()}
	}
	trusted := ""
	if opt.Trusted != nil {
		trusted = ", a trusted key"
	}
	fmt.Fprintf(w, "record: signed by %s%s (%s)\n", fp, trusted, record.SigFile)
	return nil
}
