package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Formats lists the output formats.
var Formats = []string{"text", "json", "markdown", "github"}

// Render writes r in the named format.
func Render(w io.Writer, format string, r Result) error {
	switch format {
	case "text":
		return Text(w, r)
	case "json":
		return JSON(w, r)
	case "markdown":
		return Markdown(w, r)
	case "github":
		return GitHub(w, r)
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

func summary(r Result) string {
	n := map[Severity]int{}
	for _, f := range r.Findings {
		n[f.Severity]++
	}
	return fmt.Sprintf("%d ERR, %d WARN, %d INFO", n[Err], n[Warn], n[Info])
}

func breaks(f Finding) string {
	var parts []string
	for _, p := range f.Breaks {
		parts = append(parts, p.String())
	}
	return strings.Join(parts, ", ")
}

// where is the new position, or the old one for what was removed.
func where(f Finding) string {
	if f.New.IsValid() {
		return f.New.String()
	}
	return f.Old.String()
}

// Text writes one paragraph per finding, then a summary.
func Text(w io.Writer, r Result) error {
	for _, f := range r.Findings {
		fmt.Fprintf(w, "%s: %s %s %s: %s\n", where(f), f.Severity, f.Rule, f.Name, f.Message)
		if b := breaks(f); b != "" {
			fmt.Fprintf(w, "    breaks %s\n", b)
		}
		if f.Old.IsValid() && f.New.IsValid() {
			fmt.Fprintf(w, "    was %s\n", f.Old)
		}
	}
	_, err := fmt.Fprintf(w, "%s → %s: %s\n", r.Old, r.New, summary(r))
	return err
}

// JSON writes the result with a summary.
func JSON(w io.Writer, r Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	n := map[string]int{"ERR": 0, "WARN": 0, "INFO": 0}
	for _, f := range r.Findings {
		n[f.Severity.String()]++
	}
	return enc.Encode(struct {
		Result
		Summary map[string]int `json:"summary"`
	}{r, n})
}

// Markdown writes a table for a pull-request comment.
func Markdown(w io.Writer, r Result) error {
	fmt.Fprintf(w, "### Contract changes: %s → %s\n\n%s\n\n", mdCell(r.Old), mdCell(r.New), summary(r))
	if len(r.Findings) == 0 {
		_, err := fmt.Fprintln(w, "No change of meaning.")
		return err
	}
	fmt.Fprintln(w, "| severity | rule | breaks | change | where |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for _, f := range r.Findings {
		b := breaks(f)
		if b == "" {
			b = "—"
		}
		fmt.Fprintf(w, "| %s | `%s` %s | %s | %s | `%s` |\n", f.Severity, f.Rule, f.Name, mdCell(b), mdCell(f.Message), mdCell(where(f)))
	}
	return nil
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

// GitHub writes workflow commands that annotate the pull request at the
// new position of each change.
func GitHub(w io.Writer, r Result) error {
	level := map[Severity]string{Info: "notice", Warn: "warning", Err: "error"}
	for _, f := range r.Findings {
		msg := f.Message
		if b := breaks(f); b != "" {
			msg += "\nbreaks " + b
		}
		if f.Old.IsValid() {
			msg += "\nwas " + f.Old.String()
		}
		props := []string{}
		if p := f.New; p.IsValid() {
			props = append(props, "file="+escapeProp(p.File))
			if p.Line > 0 {
				props = append(props, fmt.Sprintf("line=%d,col=%d", p.Line, p.Col))
			}
		}
		props = append(props, "title="+escapeProp(f.Rule+" "+f.Name))
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", level[f.Severity], strings.Join(props, ","), escapeData(msg)); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%s\n", summary(r))
	return err
}

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
