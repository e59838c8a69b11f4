package satcmd

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/report"
)

func init() {
	register("report", "write the HTML, PDF, JUnit, CSV and markdown reports of an evidence bundle", runReport)
}

// reportFormats are the formats sat report writes, with their file names.
var reportFormats = []struct {
	name, file string
	write      func(io.Writer, *report.Run) error
}{
	{"html", "report.html", report.HTML},
	{"junit", "junit.xml", report.JUnit},
	{"csv", "checks.csv", report.CSV},
	{"md", "summary.md", report.Markdown},
}

const reportHelp = `Reads the evidence bundle DIR alone with the reader sat verify uses
(the same checks, the same re-grade: the two cannot disagree), and
writes the reports to --out (default DIR/report): HTML, JUnit, CSV,
markdown, and report.pdf printed from the HTML (A4) by a headless
Chromium when one is installed. A bundle with grid cases also gets,
beside the HTML, the interconnection summary a utility reads:
grid-summary.json (seam.grid-summary/v1) and grid-summary.csv. Exit 0: the reports
are written and the evidence is intact; 2: they are written, but the
bundle does not verify or a recorded verdict does not re-grade; 1: no
report could be written.`

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR [--format html,junit,csv,md,pdf] [--out DIR|-] [--trust authorized_keys]", flag.ContinueOnError)
	formats := fs.String("format", "html,junit,csv,md,pdf", "comma-separated: html, junit, csv, md, pdf (printed from the HTML by a headless Chromium; left out of the default when none is installed)")
	out := fs.String("out", "", "directory to write to (default DIR/report); - writes the one format asked for to stdout")
	trust := fs.String("trust", "", "a file of SSH public keys (authorized_keys format): only their signatures count, and they must cover everything (as sat verify --trust)")
	buckets := fs.Int("plot-intervals", report.DefaultBuckets, "intervals per plot whose first, lowest, highest and last samples are drawn")
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = cli.Usagef("want one evidence bundle directory, got %d arguments", len(pos))
	}
	if err != nil {
		if err == flag.ErrHelp {
			fmt.Fprintln(stderr, reportHelp)
		}
		return fail(stderr, "report", fs, err)
	}
	dir := pos[0]
	list, pdf, err := pdfAsked(fs, *formats, *out)
	if err != nil {
		return fail(stderr, "report", fs, err)
	}
	chosen, err := chooseFormats(list, *out)
	if err != nil {
		return fail(stderr, "report", fs, err)
	}
	var trusted []ssh.PublicKey
	if *trust != "" {
		if trusted, err = readKeys(*trust); err != nil {
			return fail(stderr, "report", fs, err)
		}
	}
	t := time.Now()
	run, err := report.Load(dir, report.Options{Trusted: trusted, Plots: contains(chosen, "html"), Buckets: *buckets,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return fail(stderr, "report", fs, err)
	}
	if *out == "-" {
		err = reportFormats[chosen[0]].write(stdout, run)
	} else {
		err = writeReports(run, chosen, reportDir(dir, *out), stdout)
	}
	switch {
	case err == nil && pdf == noBrowser:
		fmt.Fprintf(stdout, "%-5s skipped: no headless Chromium on PATH to print it (Debian: apt-get install chromium)\n", "pdf")
	case err == nil && pdf != "":
		err = writePDF(pdf, filepath.Join(reportDir(dir, *out), "report.html"), stdout)
	}
	if err != nil {
		return fail(stderr, "report", fs, err)
	}
	if *out != "-" {
		fmt.Fprintf(stdout, "%d cases, %s, in %s\n", len(run.Cases), headline(run), time.Since(t).Round(time.Millisecond))
	}
	return integrityExit(run, stderr)
}

// headline is the report's verdict for the terminal: a bundle that does
// not verify is never called passed.
func headline(r *report.Run) string {
	if !r.OK() {
		return "NOT TRUSTED (recorded " + r.Outcome + "; see below)"
	}
	return r.Outcome
}

// noBrowser is pdfAsked's browser when the default formats' PDF is
// left out for want of one.
const noBrowser = "-"

// pdfAsked takes pdf out of the format list: it returns the browser to
// print with ("" for no PDF) and the list, with html in it for the
// browser to print. Asked for by --format, a PDF without a browser is
// an error; in the default list it is left out, and said so.
func pdfAsked(fs *flag.FlagSet, list, out string) (string, string, error) {
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "format" })
	var rest []string
	want, html := false, false
	for _, f := range strings.Split(list, ",") {
		switch f = strings.TrimSpace(f); f {
		case "pdf":
			want = true
		case "html":
			html = true
			rest = append(rest, f)
		default:
			rest = append(rest, f)
		}
	}
	if !want {
		return strings.Join(rest, ","), "", nil
	}
	if out == "-" {
		return "", "", cli.Usagef("--out - writes one format to stdout, and a PDF is a file: give --out DIR")
	}
	browser := findBrowser()
	switch {
	case browser == "" && explicit:
		return "", "", fmt.Errorf("a PDF is printed by a headless Chromium, and none is on PATH (%s): install it (Debian: apt-get install chromium) or leave pdf out of --format", strings.Join(browsers, ", "))
	case browser == "":
		return strings.Join(rest, ","), noBrowser, nil
	}
	if !html {
		rest = append(rest, "html")
	}
	return strings.Join(rest, ","), browser, nil
}

func chooseFormats(list, out string) ([]int, error) {
	var chosen []int
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		i := formatIndex(f)
		if i < 0 {
			return nil, cli.Usagef("unknown format %q: want html, junit, csv, md or pdf", f)
		}
		chosen = append(chosen, i)
	}
	if out == "-" && len(chosen) != 1 {
		return nil, cli.Usagef("--out - writes one format to stdout: choose one with --format")
	}
	return chosen, nil
}

func formatIndex(name string) int {
	for i, f := range reportFormats {
		if f.name == name {
			return i
		}
	}
	return -1
}

func contains(chosen []int, name string) bool {
	return slices.ContainsFunc(chosen, func(i int) bool { return reportFormats[i].name == name })
}

func reportDir(bundle, out string) string {
	if out != "" {
		return out
	}
	return filepath.Join(bundle, "report")
}

// gridSummaryFiles are written beside report.html when the bundle has
// grid cases: the interconnection summary a utility reads.
var gridSummaryFiles = []struct {
	name, file string
	write      func(io.Writer, *report.Run) error
}{
	{"grid", report.GridSummaryJSONFile, report.GridSummaryJSON},
	{"grid", report.GridSummaryCSVFile, report.GridSummaryCSV},
}

// writeReports writes each format to its file, whole or not at all, and
// prints the paths; with the HTML, the grid summary files when the
// bundle has grid cases.
func writeReports(run *report.Run, chosen []int, dir string, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, i := range chosen {
		f := reportFormats[i]
		if err := writeReport(run, f.name, filepath.Join(dir, f.file), f.write, stdout); err != nil {
			return err
		}
	}
	if !contains(chosen, "html") || len(run.Grid) == 0 {
		return nil
	}
	for _, f := range gridSummaryFiles {
		if err := writeReport(run, f.name, filepath.Join(dir, f.file), f.write, stdout); err != nil {
			return err
		}
	}
	return nil
}

// writeReport writes one file whole or not at all and prints its path.
func writeReport(run *report.Run, name, path string, write func(io.Writer, *report.Run) error, stdout io.Writer) error {
	var buf bytes.Buffer
	if err := write(&buf, run); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-5s %s (%s)\n", name, path, size(buf.Len()))
	return nil
}

func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// integrityExit prints what is wrong with the evidence and returns 2 if
// anything is, 0 otherwise.
func integrityExit(run *report.Run, stderr io.Writer) int {
	for _, p := range run.Integrity {
		fmt.Fprintf(stderr, "sat report: %s does not verify: %s\n", run.Dir, p)
	}
	for _, m := range run.Mismatches {
		what := strings.TrimSpace(m.Case + " " + m.Check)
		fmt.Fprintf(stderr, "sat report: error: re-grading %s from the raw samples gives %s, the bundle recorded %s: %s\n",
			what, m.Regrade, m.Recorded, m.Detail)
	}
	if run.OK() {
		return cli.ExitOK
	}
	return cli.ExitFindings
}
