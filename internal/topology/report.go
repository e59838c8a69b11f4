package topology

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// DriftFormats are the drift report's formats.
var DriftFormats = []string{"text", "json", "markdown"}

// WriteReport writes a drift report as text, JSON or markdown.
func WriteReport(w io.Writer, r *Report, format string) error {
	switch format {
	case "text", "":
		return writeText(w, r)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "markdown":
		return writeMarkdown(w, r)
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(DriftFormats, ", "))
}

func writeText(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "drift: %s against %s\n", r.Inventory, strings.Join(r.Inputs, ", "))
	fmt.Fprintf(w, "truth: %s\n", r.Truth)
	if !r.Drifted() {
		_, err := fmt.Fprintln(w, "no drift")
		return err
	}
	fmt.Fprintf(w, "%d difference(s):\n", len(r.Findings))
	for _, f := range r.Findings {
		fmt.Fprintf(w, "  %-10s %-20s %s\n", f.System, f.Class, f.Message)
	}
	return nil
}

func writeMarkdown(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "## Topology drift\n\n%s against %s.  \nTruth: %s.\n\n", r.Inventory, strings.Join(r.Inputs, ", "), r.Truth)
	if !r.Drifted() {
		_, err := fmt.Fprintln(w, "No drift.")
		return err
	}
	fmt.Fprintf(w, "%d difference(s):\n\n| system | class | subject | inventory | scheduler | what |\n| --- | --- | --- | --- | --- | --- |\n", len(r.Findings))
	for _, f := range r.Findings {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", f.System, f.Class, md(f.Subject), md(f.Want), md(f.Got), md(f.Message))
	}
	return nil
}

// md escapes a table cell.
func md(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "[", `\[`, "]", `\]`).Replace(s)
}
