package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// JUnit XML as CI systems read it (the Ant/Surefire dialect that
// Jenkins, GitLab and GitHub test reporters accept): one testsuite per
// level, one testcase per case, classname "module.boundary".
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string          `xml:"name,attr"`
	Classname  string          `xml:"classname,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Failure    *junitProblem   `xml:"failure,omitempty"`
	Error      *junitProblem   `xml:"error,omitempty"`
	Skipped    *junitProblem   `xml:"skipped,omitempty"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit writes the run as JUnit XML. A case that failed carries the
// measured value against the limit of each failed check; an ERROR case
// is a JUnit error (the harness, not the product); ABORTED and SKIPPED
// cases are skipped. If the bundle does not verify or a verdict does
// not re-grade, an extra "evidence" suite fails with the reasons, so CI
// cannot pass a report it should not trust.
func JUnit(w io.Writer, r *Run) error {
	doc := junitSuites{Name: "sat " + r.Site}
	var total time.Duration
	var spent []time.Duration // per suite
	at := map[string]int{}
	for i := range r.Cases {
		c := &r.Cases[i]
		j, ok := at[c.Level]
		if !ok {
			j = len(doc.Suites)
			at[c.Level] = j
			doc.Suites = append(doc.Suites, junitSuite{Name: fmt.Sprintf("%s %s", r.Site, c.Level), Properties: junitProps(r)})
			spent = append(spent, 0)
		}
		spent[j] += c.Duration()
		s := &doc.Suites[j]
		if s.Timestamp == "" && !c.Start.IsZero() {
			s.Timestamp = c.Start.UTC().Format("2006-01-02T15:04:05")
		}
		jc := junitCaseOf(c)
		s.Cases = append(s.Cases, jc)
		s.Tests++
		countJUnit(&s.Failures, &s.Errors, &s.Skipped, jc)
		total += c.Duration()
	}
	if !r.OK() {
		doc.Suites = append(doc.Suites, evidenceSuite(r))
		spent = append(spent, 0)
	}
	for i := range doc.Suites {
		s := &doc.Suites[i]
		s.Time = seconds(spent[i])
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
	}
	doc.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func junitProps(r *Run) []junitProperty {
	props := []junitProperty{
		{"outcome", r.Outcome},
		{"tool_version", r.ToolVersion},
		{"plan_digest", r.PlanDigest},
		{"contracts_digest", r.ContractsDigest},
	}
	if r.Sim != "" {
		props = append(props, junitProperty{"simulated", r.Sim})
	}
	return props
}

func junitCaseOf(c *Case) junitCase {
	jc := junitCase{Name: c.ID, Classname: c.Module + "." + c.Boundary, Time: seconds(c.Duration())}
	if c.Cx.ID != "" {
		jc.Properties = []junitProperty{{"commissioning_level", c.Cx.ID}, {"commissioning_level_name", c.Cx.Name}}
	}
	var lines []string
	for _, k := range c.Checks {
		lines = append(lines, fmt.Sprintf("%s %s %s: %s", k.Verdict, k.ID, k.Channel, k.Detail))
	}
	jc.SystemOut = strings.Join(append([]string{"clause " + c.ClausePath + " (" + c.ClausePos + ")"}, lines...), "\n")
	switch c.Verdict {
	case Pass:
	case Fail:
		jc.Failure = problem(c, Fail)
	case Error:
		jc.Error = problem(c, Error)
	default:
		jc.Skipped = &junitProblem{Message: c.Verdict + ": " + c.Reason}
	}
	return jc
}

// problem summarises the checks of one outcome: "guarantee-in-band
// p1/ma/feed-a/voltage: measured 398.5 V, limit 400 V (margin -1.5 V)".
func problem(c *Case, outcome string) *junitProblem {
	var msgs, texts []string
	for _, k := range c.Checks {
		if k.Verdict != outcome {
			continue
		}
		msgs = append(msgs, checkSummary(k))
		texts = append(texts, k.ID+": "+k.Detail)
	}
	if len(msgs) == 0 && c.Reason != "" {
		msgs = append(msgs, c.Reason)
	}
	return &junitProblem{Message: strings.Join(msgs, "; "), Type: outcome, Text: strings.Join(texts, "\n")}
}

// checkSummary is a check's measured value against its limit in a few
// words.
func checkSummary(k Check) string {
	switch {
	case !k.HasValue && k.HasLimit:
		return fmt.Sprintf("%s %s: nothing measured, limit %s: %s", k.ID, k.Channel, fmtNum(k.Limit, k.Unit), k.Detail)
	case !k.HasValue:
		return fmt.Sprintf("%s %s: %s", k.ID, k.Channel, k.Detail)
	}
	return fmt.Sprintf("%s %s: measured %s, limit %s (margin %s)", k.ID, k.Channel,
		fmtNum(k.Measured, k.Unit), fmtNum(k.Limit, k.Unit), fmtNum(k.Margin, k.Unit))
}

func evidenceSuite(r *Run) junitSuite {
	s := junitSuite{Name: r.Site + " evidence"}
	add := func(name, msg string) {
		s.Cases = append(s.Cases, junitCase{Name: name, Classname: "evidence", Time: "0.000",
			Failure: &junitProblem{Message: msg, Type: "EVIDENCE"}})
		s.Tests++
		s.Failures++
	}
	for _, p := range r.Integrity {
		add("verify", p)
	}
	for _, m := range r.Mismatches {
		add("regrade "+m.Case+" "+m.Check, fmt.Sprintf("recorded %s, re-graded %s: %s", m.Recorded, m.Regrade, m.Detail))
	}
	return s
}

func countJUnit(failures, errors, skipped *int, c junitCase) {
	switch {
	case c.Failure != nil:
		*failures++
	case c.Error != nil:
		*errors++
	case c.Skipped != nil:
		*skipped++
	}
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
