package satcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// browsers are the programs that print the HTML report to PDF, first
// found wins: Debian's chromium, then the names others use.
var browsers = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// findBrowser is the headless browser on PATH, or "".
func findBrowser() string {
	for _, b := range browsers {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	return ""
}

// printTimeout bounds the browser: a report of a few hundred cases
// prints in seconds.
const printTimeout = 2 * time.Minute

// writePDF prints the HTML report at html to report.pdf beside it with
// a headless browser: A4, the report's own print styles (page breaks,
// SIMULATED in every page's margin), no browser header or footer.
func writePDF(browser, html string, stdout io.Writer) error {
	return printPDF(browser, html, "report.pdf", stdout)
}

// printPDF prints the page at html to the file name beside it, as
// writePDF does.
func printPDF(browser, html, name string, stdout io.Writer) error {
	abs, err := filepath.Abs(html)
	if err != nil {
		return err
	}
	pdf := filepath.Join(filepath.Dir(abs), name)
	tmp := pdf + ".tmp"
	ctx, cancel := context.WithTimeout(context.Background(), printTimeout)
	defer cancel()
	profile, err := os.MkdirTemp("", "sat-report-browser-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(profile)
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
		"--user-data-dir="+profile, "--print-to-pdf="+tmp, "file://"+abs)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("printing %s to PDF with %s: %w\n%s", html, browser, err, lastLines(out, 5))
	}
	raw, err := os.ReadFile(tmp)
	if err != nil || len(raw) < 5 || string(raw[:5]) != "%PDF-" {
		os.Remove(tmp)
		return errors.Join(fmt.Errorf("printing %s to PDF with %s: no PDF was written\n%s", html, browser, lastLines(out, 5)), err)
	}
	if err := os.Rename(tmp, pdf); err != nil {
		return err
	}
	pages := ""
	if n := pdfPages(raw); n > 0 {
		pages = fmt.Sprintf(", %d A4 pages", n)
	}
	fmt.Fprintf(stdout, "%-5s %s (%s%s)\n", "pdf", pdf, size(len(raw)), pages)
	return nil
}

var pageCount = regexp.MustCompile(`/Type\s*/Pages\b[^>]*?/Count (\d+)|/Count (\d+)[^>]*?/Type\s*/Pages\b`)

// pdfPages is the page count of the PDF's page tree root: the largest
// /Count of a /Pages node.
func pdfPages(raw []byte) int {
	best := 0
	for _, m := range pageCount.FindAllSubmatch(raw, -1) {
		for _, g := range m[1:] {
			if n, err := strconv.Atoi(string(g)); err == nil && n > best {
				best = n
			}
		}
	}
	return best
}

func lastLines(b []byte, n int) string {
	lines := regexp.MustCompile(`\r?\n`).Split(string(b), -1)
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := ""
	for _, l := range lines {
		if l != "" {
			out += "  " + l + "\n"
		}
	}
	return out
}
