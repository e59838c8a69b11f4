package report

import (
	"fmt"
	"io"
	"strings"
)

// Markdown writes a summary short enough for a pull-request comment:
// the outcome, the integrity of the evidence, a tally by level and
// module, and every case that did not pass with its measured values.
func Markdown(w io.Writer, r *Run) error {
	var b strings.Builder
	var all Counts
	for i := range r.Cases {
		all.Add(r.Cases[i].Verdict)
	}
	icon := "✅"
	if !r.Good() {
		icon = "❌"
	}
	fmt.Fprintf(&b, "### %s %s: %s\n\n", icon, title(r), r.Verdict()) // a simulated run's title says SIMULATED
	fmt.Fprintf(&b, "%d of %d cases passed", all.Pass, all.Total())
	if all.Fail+all.Error+all.Aborted+all.Skipped > 0 {
		fmt.Fprintf(&b, " (%d failed, %d error, %d aborted, %d skipped)", all.Fail, all.Error, all.Aborted, all.Skipped)
	}
	b.WriteString(".")
	if r.Sim != "" {
		fmt.Fprintf(&b, " Run against the simulated site (%s).", r.Sim)
	}
	b.WriteString("\n\n")
	writeIntegrity(&b, r)
	b.WriteString("| level | module | pass | fail | error | other |\n| --- | --- | ---: | ---: | ---: | ---: |\n")
	for _, g := range Tally(r.Cases, func(c *Case) string { return c.Level + "\x00" + c.Module }) {
		level, module, _ := strings.Cut(g.Name, "\x00")
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d |\n", level, module, g.Pass, g.Fail, g.Error, g.Aborted+g.Skipped)
	}
	writeLevels(&b, r)
	writeNotPassed(&b, r)
	writeCaptures(&b, r)
	fmt.Fprintf(&b, "\n<sub>sat %s · plan `%s` · `sat report %s`</sub>\n", r.ToolVersion, short(r.PlanDigest), r.Dir)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeIntegrity(b *strings.Builder, r *Run) {
	if r.OK() {
		signed := "not signed: its hashes detect accidents, not a deliberate edit"
		switch {
		case r.Signed:
			signed = "signed by `" + r.SignedBy + "`"
		case len(r.SignOffs) > 0: // say what is unsigned, and let each amendment say what it is
			signed = "the run is not signed: its hashes detect accidents, not a deliberate edit; each amendment below says who signed it"
		}
		if !r.Complete {
			signed += "; the run did not finish: no manifest; verified up to its last checkpoint"
		}
		fmt.Fprintf(b, "Evidence verifies (%s); every verdict re-grades from the raw samples.\n\n", signed)
		for _, s := range r.SignOffs {
			key := "UNSIGNED"
			if s.Key != "" {
				key = "`" + s.Key + "`"
			}
			fmt.Fprintf(b, "- %s by %s (%s), %s%s\n", s.Purpose, mdEscape(s.By), s.Role, key, noteText(s.Note))
		}
		if len(r.SignOffs) > 0 {
			b.WriteString("\n")
		}
		return
	}
	b.WriteString("> [!CAUTION]\n> **The evidence cannot be trusted as it stands.**\n")
	for _, p := range r.Integrity {
		fmt.Fprintf(b, "> - verify: %s\n", mdEscape(p))
	}
	for _, m := range r.Mismatches {
		fmt.Fprintf(b, "> - re-grade: %s %s recorded %s, the raw samples give %s: %s\n", m.Case, m.Check, m.Recorded, m.Regrade, mdEscape(m.Detail))
	}
	b.WriteString("\n")
}

func writeNotPassed(b *strings.Builder, r *Run) {
	var rows []string
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Verdict == Pass {
			continue
		}
		checks := failingChecks(c)
		if len(checks) == 0 {
			rows = append(rows, fmt.Sprintf("| `%s` | %s | | | | %s |", c.ID, c.Verdict, mdEscape(c.Reason)))
		}
		for _, k := range checks {
			rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | %s | %s | %s |", c.ID, k.Verdict, k.ID,
				value(k, k.Measured), limitText(k), mdEscape(k.Detail)))
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n<details open><summary>Cases that did not pass</summary>\n\n")
	b.WriteString("| case | verdict | check | measured | limit | detail |\n| --- | --- | --- | ---: | ---: | --- |\n")
	b.WriteString(strings.Join(rows, "\n"))
	b.WriteString("\n\n</details>\n")
}

// writeLevels counts the cases of each commissioning level that passed.
func writeLevels(b *strings.Builder, r *Run) {
	groups := r.LevelTally()
	if len(groups) == 0 {
		return
	}
	var parts []string
	for _, g := range groups {
		parts = append(parts, fmt.Sprintf("%s %d of %d passed", g.Label(), g.Pass, g.Total()))
	}
	fmt.Fprintf(b, "\nBy commissioning level: %s.\n", strings.Join(parts, "; "))
}

// writeCaptures lists the analysers' captures and their verdicts.
func writeCaptures(b *strings.Builder, r *Run) {
	if len(r.Captures) == 0 {
		return
	}
	b.WriteString("\n<details><summary>Waveform captures</summary>\n\n")
	b.WriteString("| capture | case | mask | verdict | clock offset | detail |\n| --- | --- | --- | --- | ---: | --- |\n")
	for _, c := range r.Captures {
		fmt.Fprintf(b, "| `%s` | `%s` | %s on %s | %s | %+.3f s | %s |\n", c.File, c.Case, c.Mask, c.Channel, c.Verdict, c.OffsetS, mdEscape(c.Detail))
	}
	b.WriteString("\n</details>\n")
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func short(digest string) string {
	if _, hex, ok := strings.Cut(digest, ":"); ok && len(hex) > 12 {
		return digest[:len(digest)-len(hex)+12]
	}
	return digest
}

func noteText(n string) string {
	if n == "" {
		return ""
	}
	return ": " + mdEscape(n)
}
