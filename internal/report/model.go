// Package report turns an evidence bundle into the documents people and
// machines read: a self-contained HTML report with a plot per case, JUnit
// XML for CI, CSV for spreadsheets, a markdown summary for pull-request
// comments, and case-by-case comparisons of two runs (FAT at the factory
// against SAT on site). Everything is built from the bundle alone, and
// every verdict is re-graded from the raw samples first: a report never
// repeats a verdict it cannot reproduce.
package report

import (
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// Outcomes of a case or check, as the runner records them.
const (
	Pass    = "PASS"
	Fail    = "FAIL"
	Error   = "ERROR"
	Aborted = "ABORTED"
	Skipped = "SKIPPED"
)

// Run is the report's view of one evidence bundle.
type Run struct {
	Dir             string
	Site            string
	Level           string // the plan's level: fat, sat, ist, all
	Module          string // the module the plan is restricted to, if any
	ToolVersion     string
	PlanDigest      string
	ContractsDigest string
	BindingDigest   string
	Outcome         string // passed, failed, aborted, error
	Operator        string // who ran it (sat run --operator)
	Sim             string // non-empty when run against the simulated site: what it was
	Started         time.Time
	Finished        time.Time
	Signed          bool
	SignedBy        string // key fingerprint
	// Trust says in one line whether the bundle is signed, by whom and
	// up to where (as sat verify's first line).
	Trust string
	// Complete is false for a run that stopped before its manifest was
	// written (aborted, killed): its journal and samples verify up to
	// the last checkpoint, and Unverified bytes of samples follow it.
	Complete   bool
	Unverified int64
	// ManifestDigest is the sha256 of manifest.json, which a signed
	// paper report names to bind itself to the evidence.
	ManifestDigest string
	Integrity      []string   // what evidence.Verify found wrong
	Mismatches     []Mismatch // re-graded verdicts that differ from the recorded ones
	Cases          []Case
	Witnesses      []Witness
	// Instruments are the binding's instruments and their calibration.
	Instruments []results.Instrument
	// SignOffs are the signed amendments after the run: sign-offs by a
	// witness or the accepting engineer, attachments.
	SignOffs []SignOff
	// Attachments are the files amendments added, in order.
	Attachments []Attachment
	// Handover says where a run stopped between shifts (its outcome is
	// Unfinished).
	Handover string
	// Captures are the analyser captures attached to cases, graded
	// against their masks; Coverage is the plan's coverage table with
	// what they proved (capture.go).
	Captures []Capture
	Coverage []CoverageRow
	// Grid are the plan's grid cases as the utility reads them: what
	// drove the site, how the point-of-interconnection meter was
	// sampled, each limit and margin, and their plots (grid.go). The
	// interconnection summary (GridSummary) is made from them.
	Grid []GridCase
	// Commissioning are the plan's commissioning rules (the defaults for
	// a plan compiled before plans carried them): each case's tag, the
	// levels the summary counts.
	Commissioning *plan.Commissioning
	// Boundaries are the boundaries the plan tests, with their parties
	// and signatures on the contracts (none in an older plan): the
	// sign-off names each party.
	Boundaries []plan.Boundary
}

// SignOff is a signed amendment: who signed in what role, when, with
// which key, and what it adds.
type SignOff struct {
	Purpose, Role, By, Note string
	Key                     string
	At                      time.Time
	Adds                    string // what it adds: its files, and how many records
}

// Unfinished is the outcome of a run stopped for a hand-over between
// shifts: not aborted, not over.
const Unfinished = "unfinished"

// Attachment is a file a signed amendment added (sat attach): a photo
// is shown, anything else named.
type Attachment struct {
	Name, By, Note string
	Size           int64
	Digest         string
	Image          template.URL // a data: URL, for a photo
}

// OK reports whether the bundle verified and every verdict re-graded to
// what was recorded.
func (r *Run) OK() bool { return len(r.Integrity) == 0 && len(r.Mismatches) == 0 }

// Verdict is the report's headline: the integrity verdict first, so a
// bundle that does not verify never reads PASSED, then the outcome.
func (r *Run) Verdict() string {
	if !r.OK() {
		return "NOT TRUSTED"
	}
	return strings.ToUpper(r.Outcome)
}

// Good reports whether the headline is a pass that can be relied on.
func (r *Run) Good() bool { return r.OK() && r.Outcome == "passed" }

// Signer is a row of the paper sign-off: a role, the person named for it
// where the evidence knows them, and the key of a signed sign-off for
// that role. A party of a boundary the plan tests has its row too: the
// party (Organisation), the boundary, its side of it and its signature
// on the contracts the plan was compiled from.
type Signer struct {
	Role, Name, Key string
	Organisation    string
	Boundary        string
	Side            string          // supplier, consumer, both or other
	Contract        *plan.Signature // nil for the run's own rows
}

// Sides of a boundary a party signs for.
const (
	SideSupplier = "supplier"
	SideConsumer = "consumer"
	SideBoth     = "supplier and consumer"
	SideOther    = "other"
)

// Signers are the sign-off rows: the operator who ran the plan, the
// witness and the accepting engineer (named, and their keys given, when
// they signed in the evidence with sat sign-off), the owner, then every
// party of every boundary the plan tests with its signature on the
// contracts. A plan that does not record its boundaries (compiled
// before plans kept them) gets the generic supplier's and consumer's
// vendor rows instead.
func (r *Run) Signers() []Signer {
	rows := []Signer{{Role: "operator", Name: r.Operator}}
	for _, role := range []string{"witness", "acceptance"} {
		n := len(rows)
		for _, s := range r.SignOffs {
			if s.Role == role {
				rows = append(rows, Signer{Role: roleName(role), Name: s.By, Key: s.Key})
			}
		}
		if len(rows) == n {
			rows = append(rows, Signer{Role: roleName(role), Name: r.witnessNames(role)})
		}
	}
	rows = append(rows, Signer{Role: "owner"})
	if len(r.Boundaries) == 0 {
		return append(rows, Signer{Role: "supplier's vendor"}, Signer{Role: "consumer's vendor"})
	}
	for _, b := range r.Boundaries {
		for i := range b.Signatures {
			s := &b.Signatures[i]
			side := sideOf(b, s.Party)
			rows = append(rows, Signer{Role: side, Organisation: s.Party, Boundary: b.ID, Side: side, Contract: s})
		}
	}
	return rows
}

// sideOf is the side of boundary b that party signs for: the vendor of
// its supplier or consumer module, or another party the boundary lists
// (the site's operator on a grid boundary, whose consumer is the site).
func sideOf(b plan.Boundary, party string) string {
	sup, con := party == b.Supplier.Party, party == b.Consumer.Party
	switch {
	case sup && con:
		return SideBoth
	case sup:
		return SideSupplier
	case con:
		return SideConsumer
	}
	return SideOther
}

func roleName(role string) string {
	if role == "acceptance" {
		return "accepting engineer"
	}
	return role
}

// witnessNames are those who confirmed the run's manual steps, for the
// witness row when no witness signed in the evidence.
func (r *Run) witnessNames(role string) string {
	if role != "witness" {
		return ""
	}
	var names []string
	for _, w := range r.Witnesses {
		if w.By != "" && w.By != r.Operator && !slices.Contains(names, w.By) {
			names = append(names, w.By)
		}
	}
	return strings.Join(names, ", ")
}

// Case is one test case with its checks and plot.
type Case struct {
	ID         string
	Title      string
	Level      string
	Kind       string // steady, transient, failure
	Module     string
	Boundary   string
	ClausePath string // boundaries."p1-ma".steady."voltage-a"
	ClausePos  string // file:line:col in the contracts
	Verdict    string
	Reason     string // why an ERROR, ABORTED or SKIPPED case has no verdict
	Start, End time.Time
	Checks     []Check
	Plot       *PlotData // nil when the case has no samples to show
	// Attempt is the attempt shown, of Attempts in all; Earlier are the
	// attempts before it, kept and re-graded, that no longer count.
	// Ambient are the ambient channels as read at the case's start.
	Ambient           []results.Ambient
	Attempt, Attempts int
	Retry             string // who signed the retry amendment shown, if it is one
	Earlier           []Attempt
	// Cx is the case's commissioning level as the site tags it.
	Cx CxTag
}

// CxTag is a commissioning level as reports show it: its id, the
// site's name for it and the tag's colour (#rrggbb).
type CxTag struct{ ID, Name, Colour string }

// Label is the tag's text: "L3 functional".
func (t CxTag) Label() string {
	if t.ID == "" {
		return "no level"
	}
	return strings.TrimSpace(t.ID + " " + t.Name)
}

// cxTag is the tag of level id under the rules cx; a level the rules do
// not declare keeps its id, grey.
func cxTag(cx *plan.Commissioning, id string) CxTag {
	if l, ok := cx.Level(id); ok {
		return CxTag{ID: l.ID, Name: l.Name, Colour: l.Colour}
	}
	return CxTag{ID: id, Colour: "#6b7280"}
}

// LevelGroup is the tally of the cases of one commissioning level.
type LevelGroup struct {
	CxTag
	Counts
}

// LevelTally counts the cases per commissioning level, in the order of
// the plan's levels, then any case of a level the plan does not declare;
// a level without cases is left out.
func (r *Run) LevelTally() []LevelGroup {
	var out []LevelGroup
	at := map[string]int{}
	if r.Commissioning != nil {
		for _, l := range r.Commissioning.Levels {
			at[l.ID] = len(out)
			out = append(out, LevelGroup{CxTag: CxTag{ID: l.ID, Name: l.Name, Colour: l.Colour}})
		}
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		j, ok := at[c.Cx.ID]
		if !ok {
			j = len(out)
			at[c.Cx.ID] = j
			out = append(out, LevelGroup{CxTag: c.Cx})
		}
		out[j].Add(c.Verdict)
	}
	return slices.DeleteFunc(out, func(g LevelGroup) bool { return g.Total() == 0 })
}

// Attempt is an earlier attempt of a case.
type Attempt struct {
	N          int
	Verdict    string // re-graded
	Reason     string
	Start, End time.Time
	Where      string // "the run", "retry amendment 2 by NAME"
}

// Duration is how long the case ran.
func (c *Case) Duration() time.Duration {
	if c.Start.IsZero() || c.End.IsZero() {
		return 0
	}
	return c.End.Sub(c.Start)
}

// Check is one graded check of a case.
type Check struct {
	ID      string
	Kind    string // in_band, max_deviation, recovery_time, …
	Side    string // guarantee, require
	Channel string
	Unit    string
	Verdict string
	// Measured, Limit and Margin are in Unit (seconds for time checks);
	// Margin is positive inside the limit, negative outside.
	Measured, Limit, Margin float64
	HasValue                bool   // Measured and Margin hold: something was measured
	HasLimit                bool   // Limit holds
	Detail                  string // the grader's sentence: "431.2 V above 430.6 V at +12.4 s"
	Sources                 []string
}

// Mismatch is a verdict the raw samples do not reproduce.
type Mismatch struct {
	Case, Check       string
	Recorded, Regrade string // verdicts
	Detail            string
}

// Witness is a manual step and who confirmed it.
type Witness struct {
	Case   string
	Step   string
	Action string
	By     string
	At     time.Time
	Note   string
}

// Counts is the pass/fail tally of a group of cases.
type Counts struct {
	Pass, Fail, Error, Aborted, Skipped int
}

// Add counts one verdict.
func (c *Counts) Add(verdict string) {
	switch verdict {
	case Pass:
		c.Pass++
	case Fail:
		c.Fail++
	case Error:
		c.Error++
	case Aborted:
		c.Aborted++
	default:
		c.Skipped++
	}
}

// Total is the number of cases counted.
func (c Counts) Total() int { return c.Pass + c.Fail + c.Error + c.Aborted + c.Skipped }

// Group is a tally under a name (a level, a module, a boundary).
type Group struct {
	Name string
	Counts
}

// Tally groups the cases by key, in first-seen order.
func Tally(cases []Case, key func(*Case) string) []Group {
	var out []Group
	at := map[string]int{}
	for i := range cases {
		k := key(&cases[i])
		j, ok := at[k]
		if !ok {
			j = len(out)
			at[k] = j
			out = append(out, Group{Name: k})
		}
		out[j].Add(cases[i].Verdict)
	}
	return out
}
