package diag

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Formats lists the renderers by name.
var Formats = []string{"text", "json", "github", "sarif"}

// Render writes l in the named format. tool and version name the program
// in SARIF output; rules describes rule ids for SARIF.
func Render(w io.Writer, format string, l List, rules map[string]string) error {
	switch format {
	case "text":
		return Text(w, l)
	case "json":
		return JSON(w, l)
	case "github":
		return GitHub(w, l)
	case "sarif":
		return SARIF(w, l, rules)
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// Text writes one diagnostic per paragraph: position, severity, rule,
// message, then the hint and related positions indented.
func Text(w io.Writer, l List) error {
	for _, d := range l {
		fmt.Fprintf(w, "%s: %s %s: %s\n", d.Pos, d.Severity, d.Rule, d.Message)
		for _, r := range d.Related {
			fmt.Fprintf(w, "    %s: %s\n", r.Pos, r.Message)
		}
		if d.Hint != "" {
			fmt.Fprintf(w, "    fix: %s\n", d.Hint)
		}
	}
	_, err := fmt.Fprintf(w, "%d error(s), %d warning(s)\n", l.Count(Error), l.Count(Warning)-l.Count(Error))
	return err
}

// JSON writes {"diagnostics": [...]}; the list is never null.
func JSON(w io.Writer, l List) error {
	if l == nil {
		l = List{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		Diagnostics List `json:"diagnostics"`
	}{l})
}

// GitHub writes workflow commands that annotate a pull request:
// ::error file=F,line=L,col=C,title=RULE::message
func GitHub(w io.Writer, l List) error {
	for _, d := range l {
		level := map[Severity]string{Info: "notice", Warning: "warning", Error: "error"}[d.Severity]
		msg := d.Message
		if d.Hint != "" {
			msg += "\nfix: " + d.Hint
		}
		for _, r := range d.Related {
			msg += fmt.Sprintf("\n%s: %s", r.Pos, r.Message)
		}
		props := []string{}
		if d.Pos.File != "" {
			props = append(props, "file="+escapeProp(d.Pos.File))
			if d.Pos.Line > 0 {
				props = append(props, fmt.Sprintf("line=%d,col=%d", d.Pos.Line, d.Pos.Col))
			}
		}
		props = append(props, "title="+escapeProp(d.Rule))
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", level, strings.Join(props, ","), escapeData(msg)); err != nil {
			return err
		}
	}
	return nil
}

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
