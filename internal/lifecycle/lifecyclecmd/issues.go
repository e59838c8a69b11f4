package lifecyclecmd

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/lifecycle"
)

// IssuesSummary and GateSummary are the lines sat's usage shows.
const (
	IssuesSummary = "the commissioning issues log: open from a bundle, list, show, assign, waive, export (sat issues help)"
	GateSummary   = "a commissioning level's gate for a module: passes, or says what is missing"
)

var issuesProgram = &cli.Program{
	Name:     "sat issues",
	About:    "sat issues keeps the commissioning issues log in the lifecycle store: every failed case of a recorded bundle an issue, owned by the party whose guarantee it broke, until a passing retry or a signed waiver closes it.",
	Exits:    "0 done, 1 failed or refused (the error says why), 3 a conflict: the log changed meanwhile, run it again.",
	NoBudget: map[string]bool{"open": true, "list": true, "show": true, "assign": true, "waive": true, "export": true},
}

// IssuesMain runs sat issues with args (after "issues").
func IssuesMain(args []string, stdout, stderr io.Writer) int {
	return issuesProgram.Main(args, stdout, stderr)
}

func init() {
	issuesProgram.Register("open", "record a verified bundle in the log: an issue for each failed case, closures for passing retries", runIssuesOpen).
		WithExample("sat issues open --from evidence/sat-ma --store site.db --key keys/cx")
	issuesProgram.Register("list", "the issues, open ones by default", runIssuesList).
		WithExample("sat issues list --store site.db --module ma --status all")
	issuesProgram.Register("show", "one issue: what failed, its owner and contacts, its bundle and case, its history", runIssuesShow).
		WithExample("sat issues show ma-1 --store site.db")
	issuesProgram.Register("assign", "give an open issue to another owner, with a reason", runIssuesAssign).
		WithExample("sat issues assign ma-1 --owner CoolFlow --reason 'the loop, not the feed' --store site.db --key keys/cx")
	issuesProgram.Register("waive", "close an open issue without a retry: the accepting engineer's signed waiver", runIssuesWaive).
		WithExample("sat issues waive ma-1 --reason 'accepted with the owner: 0.2 s over, no load affected' --store site.db --key keys/accept")
	issuesProgram.Register("export", "the log as CSV or JSON with the columns commissioning platforms import", runIssuesExport).
		WithExample("sat issues export --store site.db --format csv -o issues.csv")
}

func issuesFail(stderr io.Writer, name string, c *common, err error) int {
	code := issuesProgram.Fail(stderr, name, c.fs, err)
	if lifecycle.IsConflict(err) {
		return ExitConflict
	}
	return code
}

func runIssuesOpen(args []string, stdout, stderr io.Writer) int {
	c := newCommon("--from DIR").withAuth().withFormat()
	from := c.fs.String("from", "", "the evidence bundle to record (it must verify, signed by a key the store trusts)")
	_, err := c.parse(args, 0, "no argument")
	if err == nil && *from == "" {
		err = cli.Usagef("give the bundle: --from DIR")
	}
	if err != nil {
		return issuesFail(stderr, "open", c, err)
	}
	c.dry(stdout)
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return issuesFail(stderr, "open", c, err)
	}
	defer s.Close()
	a, err := c.auth()
	if err != nil {
		return issuesFail(stderr, "open", c, err)
	}
	recs, err := s.RecordBundle(ctx, a, *from)
	if err != nil {
		return issuesFail(stderr, "open", c, err)
	}
	if c.dryRun {
		return cli.ExitOK // the recorder printed what it would write
	}
	emit(stdout, c.format, recs, func(w io.Writer) { PrintRecorded(w, recs) })
	return cli.ExitOK
}

// PrintRecorded says what recording a bundle did, module by module.
func PrintRecorded(w io.Writer, recs []lifecycle.Recorded) {
	for _, r := range recs {
		if r.Already {
			fmt.Fprintf(w, "issues: bundle %s is recorded for %s already: nothing to do\n", r.Bundle, r.Module)
			continue
		}
		fmt.Fprintf(w, "issues: bundle %s recorded for %s: %d case(s), %d issue(s) opened, %d closed\n", r.Bundle, r.Module, r.Cases, len(r.Opened), len(r.Closed))
		for _, is := range r.Opened {
			fmt.Fprintf(w, "  opened %s [%s %s] owner %s (%s): %s\n", is.ID, is.Level, is.Severity, is.Owner, is.OwnerRole, is.Description)
		}
		for _, cl := range r.Closed {
			fmt.Fprintf(w, "  closed %s: %s\n", cl.Issue, cl.Reason)
		}
	}
}

// issueFilter selects issues for list and export.
type issueFilter struct {
	module, status, level, owner string
}

func (f *issueFilter) flags(c *common, status string) {
	c.fs.StringVar(&f.module, "module", "", "only this module's issues")
	c.fs.StringVar(&f.status, "status", status, "open, closed, waived or all")
	c.fs.StringVar(&f.level, "level", "", "only this commissioning level's (L1 … L5)")
	c.fs.StringVar(&f.owner, "owner", "", "only this owner's")
}

func (f *issueFilter) check() error {
	switch f.status {
	case "all", lifecycle.IssueOpen, lifecycle.IssueClosed, lifecycle.IssueWaived:
		return nil
	}
	return cli.Usagef("--status is open, closed, waived or all (got %q)", f.status)
}

func (f *issueFilter) keep(is *lifecycle.Issue) bool {
	return (f.status == "all" || is.Status == f.status) && (f.level == "" || is.Level == f.level) && (f.owner == "" || is.Owner == f.owner)
}

// readIssues opens the store and reads the issues the filter keeps.
func readIssues(c *common, f *issueFilter) ([]*lifecycle.Issue, error) {
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	log, err := s.IssuesLog(ctx, f.module)
	if err != nil {
		return nil, err
	}
	out := []*lifecycle.Issue{}
	for _, is := range log.Issues {
		if f.keep(is) {
			out = append(out, is)
		}
	}
	return out, nil
}

func runIssuesList(args []string, stdout, stderr io.Writer) int {
	c := newCommon("").withFormat()
	var f issueFilter
	f.flags(c, lifecycle.IssueOpen)
	_, err := c.parse(args, 0, "no argument")
	if err == nil {
		err = f.check()
	}
	if err != nil {
		return issuesFail(stderr, "list", c, err)
	}
	list, err := readIssues(c, &f)
	if err != nil {
		return issuesFail(stderr, "list", c, err)
	}
	emit(stdout, c.format, list, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tLEVEL\tSEVERITY\tSTATUS\tOWNER\tDUE\tCASE")
		for _, is := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", is.ID, is.Level, is.Severity, is.Status, is.Owner, is.Due.UTC().Format("2006-01-02"), is.Case)
		}
		tw.Flush()
		fmt.Fprintf(w, "%d issue(s)\n", len(list))
	})
	return cli.ExitOK
}

func runIssuesShow(args []string, stdout, stderr io.Writer) int {
	c := newCommon("ID").withFormat()
	pos, err := c.parse(args, 1, "the issue's id")
	if err != nil {
		return issuesFail(stderr, "show", c, err)
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return issuesFail(stderr, "show", c, err)
	}
	defer s.Close()
	log, err := s.IssuesLog(ctx, "")
	if err != nil {
		return issuesFail(stderr, "show", c, err)
	}
	is := log.Issue(pos[0])
	if is == nil {
		return issuesFail(stderr, "show", c, &lifecycle.IssueError{Issue: pos[0], Detail: "no such issue (sat issues list --status all)"})
	}
	emit(stdout, c.format, is, func(w io.Writer) { printIssue(w, is) })
	return cli.ExitOK
}

func printIssue(w io.Writer, is *lifecycle.Issue) {
	fmt.Fprintf(w, "issue %s: %s, %s, level %s, %s\n", is.ID, is.Status, is.Severity, is.Level, is.Kind)
	fmt.Fprintf(w, "  %s\n", is.Description)
	fmt.Fprintf(w, "  owner     %s (%s)\n", is.Owner, is.OwnerRole)
	if len(is.Contacts) > 0 {
		fmt.Fprintf(w, "  contacts  %s (signed the boundary's contract)\n", strings.Join(is.Contacts, ", "))
	}
	fmt.Fprintf(w, "  boundary  %s, clause %s (boundary digest %s)\n", is.Boundary, is.Clause, is.ClauseDigest)
	fmt.Fprintf(w, "  evidence  bundle %s, manifest %s, case %s (journal record %d): %s\n", is.Bundle, is.Manifest, is.Case, is.Record, is.Outcome)
	fmt.Fprintf(w, "  opened    %s by %s; due %s\n", stamp(is.Opened), is.OpenedBy, stamp(is.Due))
	if is.Closure != nil {
		fmt.Fprintf(w, "  %-9s %s by %s: %s\n", is.Closure.Kind, stamp(is.Closure.At), is.Closure.By, is.Closure.Reason)
	}
	for _, h := range is.History {
		extra := ""
		if h.Owner != "" && h.Op == "assigned" {
			extra = " to " + h.Owner
		}
		fmt.Fprintf(w, "  %s  %s%s by %s: %s\n", stamp(h.At), h.Op, extra, h.By, h.Reason)
	}
}

func runIssuesAssign(args []string, stdout, stderr io.Writer) int {
	c := newCommon("ID --owner PARTY --reason TEXT").withAuth().withFormat()
	owner := c.fs.String("owner", "", "the new owner: a party (vendor), or the commissioning agent")
	reason := c.fs.String("reason", "", "why (recorded and signed)")
	pos, err := c.parse(args, 1, "the issue's id")
	if err != nil {
		return issuesFail(stderr, "assign", c, err)
	}
	return changeIssue(c, "assign", stdout, stderr, func(ctx context.Context, s *lifecycle.Store, a lifecycle.Auth) (*lifecycle.Issue, error) {
		return s.AssignIssue(ctx, a, pos[0], *owner, *reason)
	})
}

func runIssuesWaive(args []string, stdout, stderr io.Writer) int {
	c := newCommon("ID --reason TEXT").withAuth().withFormat()
	reason := c.fs.String("reason", "", "why it is accepted as it is (recorded and signed)")
	pos, err := c.parse(args, 1, "the issue's id")
	if err != nil {
		return issuesFail(stderr, "waive", c, err)
	}
	return changeIssue(c, "waive", stdout, stderr, func(ctx context.Context, s *lifecycle.Store, a lifecycle.Auth) (*lifecycle.Issue, error) {
		return s.WaiveIssue(ctx, a, pos[0], *reason)
	})
}

func changeIssue(c *common, name string, stdout, stderr io.Writer, change func(context.Context, *lifecycle.Store, lifecycle.Auth) (*lifecycle.Issue, error)) int {
	c.dry(stdout)
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return issuesFail(stderr, name, c, err)
	}
	defer s.Close()
	a, err := c.auth()
	if err != nil {
		return issuesFail(stderr, name, c, err)
	}
	is, err := change(ctx, s, a)
	if err != nil {
		return issuesFail(stderr, name, c, err)
	}
	if c.dryRun {
		return cli.ExitOK
	}
	emit(stdout, c.format, is, func(w io.Writer) { printIssue(w, is) })
	return cli.ExitOK
}

// ExportRow is an issue as commissioning platforms import it.
type ExportRow struct {
	ID          string `json:"id"`
	Level       string `json:"level"`
	System      string `json:"system"` // the module, and the boundary
	Description string `json:"description"`
	Owner       string `json:"owner"`
	Severity    string `json:"severity"`
	Status      string `json:"status"`
	Created     string `json:"created"`
	Due         string `json:"due"`
	Closed      string `json:"closed"`
	ClosedBy    string `json:"closed_by"`
	Evidence    string `json:"evidence"` // bundle, manifest digest, case
}

var exportColumns = []string{"id", "level", "system", "description", "owner", "severity", "status", "created", "due", "closed", "closed_by", "evidence"}

func exportRow(is *lifecycle.Issue) ExportRow {
	r := ExportRow{ID: is.ID, Level: is.Level, System: is.Module + " / " + is.Boundary, Description: is.Description, Owner: is.Owner,
		Severity: is.Severity, Status: is.Status, Created: day(is.Opened), Due: day(is.Due),
		Evidence: fmt.Sprintf("bundle %s (manifest %s), case %s", is.Bundle, is.Manifest, is.Case)}
	if is.Closure != nil {
		r.Closed, r.ClosedBy = day(is.Closure.At), is.Closure.By
	}
	return r
}

func day(t time.Time) string { return t.UTC().Format("2006-01-02") }

func (r ExportRow) cells() []string {
	return []string{r.ID, r.Level, r.System, r.Description, r.Owner, r.Severity, r.Status, r.Created, r.Due, r.Closed, r.ClosedBy, r.Evidence}
}

func runIssuesExport(args []string, stdout, stderr io.Writer) int {
	c := newCommon("")
	var f issueFilter
	f.flags(c, "all")
	format := c.fs.String("format", "csv", "csv or json")
	out := c.fs.String("o", "", "write to this file (default: standard output)")
	_, err := c.parse(args, 0, "no argument")
	if err == nil {
		err = f.check()
	}
	if err == nil && *format != "csv" && *format != "json" {
		err = cli.Usagef("--format is csv or json (got %q)", *format)
	}
	if err != nil {
		return issuesFail(stderr, "export", c, err)
	}
	list, err := readIssues(c, &f)
	if err != nil {
		return issuesFail(stderr, "export", c, err)
	}
	rows := make([]ExportRow, len(list))
	for i, is := range list {
		rows[i] = exportRow(is)
	}
	w := stdout
	if *out != "" {
		fh, err := os.Create(*out)
		if err != nil {
			return issuesFail(stderr, "export", c, err)
		}
		defer fh.Close()
		w = fh
	}
	if err := writeExport(w, *format, rows); err != nil {
		return issuesFail(stderr, "export", c, fmt.Errorf("%s: %w", orStdout(*out), err))
	}
	return cli.ExitOK
}

func orStdout(p string) string {
	if p == "" {
		return "standard output"
	}
	return p
}

func writeExport(w io.Writer, format string, rows []ExportRow) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(exportColumns); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write(r.cells()); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// GateMain runs sat gate: LEVEL [--module M …]; it exits 2 when a gate
// does not pass. fail reports an error (and -h) as sat's other commands
// do.
func GateMain(args []string, stdout, stderr io.Writer, fail func(fs *flag.FlagSet, err error) int) int {
	c := newCommon("LEVEL [--module M]").withFormat()
	var modules stringList
	c.fs.Var(&modules, "module", "the module (repeat for several; default: every module with recorded evidence)")
	pos, err := c.parse(args, 1, "the level (L1 … L5)")
	if err != nil {
		return fail(c.fs, err)
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(c.fs, err)
	}
	defer s.Close()
	gates, err := s.Gates(ctx, pos[0], modules)
	if err != nil {
		return fail(c.fs, err)
	}
	emit(stdout, c.format, gateJSON(gates), func(w io.Writer) {
		for _, g := range gates {
			PrintGate(w, g)
		}
	})
	for _, g := range gates {
		if !g.Pass() {
			return cli.ExitFindings
		}
	}
	if len(gates) == 0 {
		fmt.Fprintln(stderr, "sat gate: no module has evidence recorded in the issues log: record a bundle with sat issues open --from DIR")
		return cli.ExitFindings
	}
	return cli.ExitOK
}

type gateOut struct {
	Module    string              `json:"module"`
	Level     string              `json:"level"`
	Name      string              `json:"name"`
	Pass      bool                `json:"pass"`
	Cases     int                 `json:"cases"`
	Passed    int                 `json:"passed"`
	Waived    int                 `json:"waived"`
	Open      map[string][]string `json:"open"`
	Missing   []string            `json:"missing"`
	Bundles   []string            `json:"bundles"`
	RulesFrom string              `json:"rules_from"`
}

func gateJSON(gs []*lifecycle.GateResult) []gateOut {
	out := []gateOut{}
	for _, g := range gs {
		out = append(out, gateOut{Module: g.Module, Level: g.Level.ID, Name: g.Level.Name, Pass: g.Pass(), Cases: g.Cases, Passed: g.Passed,
			Waived: g.Waived, Open: g.Open, Missing: g.Missing, Bundles: g.Bundles, RulesFrom: g.RulesFrom})
	}
	return out
}

// PrintGate says a gate's verdict and what it misses.
func PrintGate(w io.Writer, g *lifecycle.GateResult) {
	verdict := "PASSES"
	if !g.Pass() {
		verdict = "REFUSES"
	}
	fmt.Fprintf(w, "gate %s (%s) of %s %s: %d case(s), %d passed, %d waived", g.Level.ID, g.Level.Name, g.Module, verdict, g.Cases, g.Passed, g.Waived)
	var open []string
	for _, sev := range []string{"critical", "major", "minor"} {
		if n := len(g.Open[sev]); n > 0 {
			open = append(open, fmt.Sprintf("%d %s", n, sev))
		}
	}
	if len(open) > 0 {
		fmt.Fprintf(w, "; open issues: %s", strings.Join(open, ", "))
	}
	fmt.Fprintln(w)
	for _, m := range g.Missing {
		fmt.Fprintf(w, "  missing: %s\n", m)
	}
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
