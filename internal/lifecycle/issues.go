package lifecycle

// The commissioning issues log. Every verified bundle recorded (sat
// issues open --from, sat run --lifecycle) is one event per module it
// tested (kind commissioning): its cases' last attempts, and the issues
// that recording opened and closed. An assignment or a waiver is an
// event of its own (kind issue). The log is those events folded in
// order: no table of its own, so it is append-only, signed and chained
// as every other change of the store is, and sat lifecycle check finds
// an edit or a deletion.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// The statements and events of the issues log.
const (
	ActIssues       = "issues"        // a bundle's cases recorded: issues opened and closed
	ActIssue        = "issue"         // an issue assigned or waived
	EvCommissioning = "commissioning" // on a module: a bundle's cases, the issues it opened and closed
	EvIssue         = "issue"         // on a module: an issue assigned or waived
)

// Issue statuses.
const (
	IssueOpen   = "open"
	IssueClosed = "closed" // a passing retry of its case
	IssueWaived = "waived" // signed off by the accepting engineer
)

// Owner roles: whose guarantee the measurement broke.
const (
	OwnerSupplier = "supplier"
	OwnerConsumer = "consumer"
	OwnerAgent    = "agent" // no vendor's: the case could not be graded
)

// Agent is the owner of an issue no vendor's guarantee failed in.
const Agent = "commissioning agent"

// dueIn is how long an owner has to answer an issue, by severity.
var dueIn = map[string]time.Duration{plan.Critical: 48 * time.Hour, plan.Major: 7 * 24 * time.Hour, plan.Minor: 30 * 24 * time.Hour}

// CxCase is the last attempt of a case in a recorded bundle.
type CxCase struct {
	ID           string `json:"id"`
	Level        string `json:"level"` // commissioning level: L1 … L5
	Kind         string `json:"kind"`
	Boundary     string `json:"boundary"`
	Clause       string `json:"clause"`
	ClauseDigest string `json:"clause_digest"` // the boundary's digest the case was compiled against
	Outcome      string `json:"outcome"`
	Record       int64  `json:"record"`            // its case_end record in the journal
	Segment      int    `json:"segment,omitempty"` // the retry amendment it ran in (0: the run)
	RetriedBy    string `json:"retried_by,omitempty"`
}

// CxBundle is a bundle as the issues log recorded it for one module.
type CxBundle struct {
	Bundle     string              `json:"bundle"`
	Dir        string              `json:"dir"`
	Manifest   string              `json:"manifest"` // sha256 of manifest.json
	Head       string              `json:"head"`     // the journal's last record hash: amendments change it
	Plan       string              `json:"plan"`     // the plan's digest
	Level      string              `json:"level"`    // the plan's: fat, sat, ist, all
	Module     string              `json:"module"`
	Outcome    string              `json:"outcome"`
	SignedBy   string              `json:"signed_by"`
	Rules      *plan.Commissioning `json:"rules"`
	Boundaries []plan.Boundary     `json:"boundaries,omitempty"`
	Cases      []CxCase            `json:"cases"`
	Opened     []Issue             `json:"opened,omitempty"`
	Closed     []Closure           `json:"closed,omitempty"`

	// set when read back
	Event      int64     `json:"-"`
	RecordedAt time.Time `json:"-"`
	RecordedBy string    `json:"-"`
}

// Issue is one entry of the log.
type Issue struct {
	ID           string    `json:"id"` // MODULE-N
	Module       string    `json:"module"`
	Level        string    `json:"level"`
	Case         string    `json:"case"`
	Kind         string    `json:"kind"`
	Boundary     string    `json:"boundary"`
	Clause       string    `json:"clause"`
	ClauseDigest string    `json:"clause_digest"`
	Outcome      string    `json:"outcome"` // FAIL, ERROR, ABORTED
	Description  string    `json:"description"`
	Severity     string    `json:"severity"`
	Owner        string    `json:"owner"`
	OwnerRole    string    `json:"owner_role"`
	Contacts     []string  `json:"contacts,omitempty"` // the boundary's signers
	Bundle       string    `json:"bundle"`
	Manifest     string    `json:"manifest"`
	Record       int64     `json:"record"`
	Opened       time.Time `json:"opened"`
	Due          time.Time `json:"due"`

	// as the log stands
	OpenedBy string        `json:"opened_by,omitempty"`
	Status   string        `json:"status,omitempty"`
	Closure  *Closure      `json:"closure,omitempty"`
	History  []IssueChange `json:"history,omitempty"`
}

// Closure is how an issue closed: a passing retry amendment of its
// case, or a waiver.
type Closure struct {
	Issue    string    `json:"issue"`
	Kind     string    `json:"kind"` // closed (a retry) or waived
	At       time.Time `json:"at"`
	By       string    `json:"by"`
	Reason   string    `json:"reason"`
	Bundle   string    `json:"bundle,omitempty"`
	Manifest string    `json:"manifest,omitempty"`
	Segment  int       `json:"segment,omitempty"` // the retry amendment
	Record   int64     `json:"record,omitempty"`
}

// IssueChange is an assignment or a waiver (an issue event's data), or
// an opening or closing as the history shows it.
type IssueChange struct {
	Issue  string    `json:"issue"`
	Op     string    `json:"op"` // opened, assigned, waived, closed
	Owner  string    `json:"owner,omitempty"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	By     string    `json:"by"`
}

// Open reports whether the issue is open.
func (i *Issue) Open() bool { return i.Status == IssueOpen }

// IssueError is an issue the store cannot find or change, and why.
type IssueError struct{ Issue, Detail string }

func (e *IssueError) Error() string { return fmt.Sprintf("issue %s: %s", e.Issue, e.Detail) }

// Log is the issues log as of its last event (of one module or all).
type Log struct {
	Bundles []*CxBundle
	Issues  []*Issue
	byID    map[string]*Issue
	head    int64 // the last event folded
}

// Issue is the issue of id (nil: none).
func (l *Log) Issue(id string) *Issue { return l.byID[id] }

// openFor is the open issue of a module's case (nil: none).
func (l *Log) openFor(module, caseID string) *Issue {
	for _, is := range l.Issues {
		if is.Module == module && is.Case == caseID && is.Open() {
			return is
		}
	}
	return nil
}

func (l *Log) recorded(bundle, head, module string) bool {
	return slices.ContainsFunc(l.Bundles, func(b *CxBundle) bool { return b.Bundle == bundle && b.Head == head && b.Module == module })
}

// IssuesLog reads the log of module ("": every module).
func (s *Store) IssuesLog(ctx context.Context, module string) (*Log, error) {
	return s.issuesLog(ctx, s.db, module)
}

func (s *Store) issuesLog(ctx context.Context, q querier, module string) (*Log, error) {
	query, args := "SELECT seq, at, element, kind, actor, data FROM events WHERE kind IN (?, ?)", []any{EvCommissioning, EvIssue}
	if module != "" {
		query, args = query+" AND element = ?", append(args, module)
	}
	rows, err := q.QueryContext(ctx, s.q(query+" ORDER BY seq"), args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	l := &Log{byID: map[string]*Issue{}}
	for rows.Next() {
		var seq, at int64
		var el, kind, actor, data string
		if err := rows.Scan(&seq, &at, &el, &kind, &actor, &data); err != nil {
			return nil, s.wrap(err)
		}
		if err := l.apply(seq, fromMicros(at), kind, actor, data); err != nil {
			return nil, fmt.Errorf("lifecycle store %s: event %d of %s: %w", s.name, seq, el, err)
		}
	}
	return l, s.wrap(rows.Err())
}

// apply folds one event into the log.
func (l *Log) apply(seq int64, at time.Time, kind, actor, data string) error {
	l.head = max(l.head, seq)
	if kind == EvIssue {
		var ch IssueChange
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return err
		}
		is := l.byID[ch.Issue]
		if is == nil {
			return fmt.Errorf("it changes issue %s, which was never opened", ch.Issue)
		}
		ch.At, ch.By = at, actor
		is.History = append(is.History, ch)
		switch ch.Op {
		case "assigned":
			is.Owner = ch.Owner
		case IssueWaived:
			is.Status = IssueWaived
			is.Closure = &Closure{Issue: is.ID, Kind: IssueWaived, At: at, By: actor, Reason: ch.Reason}
		}
		return nil
	}
	var b CxBundle
	if err := json.Unmarshal([]byte(data), &b); err != nil {
		return err
	}
	b.Event, b.RecordedAt, b.RecordedBy = seq, at, actor
	for _, o := range b.Opened {
		is := o
		is.Status, is.OpenedBy = IssueOpen, actor
		is.History = []IssueChange{{Issue: is.ID, Op: "opened", Owner: is.Owner, Reason: is.Description, At: at, By: actor}}
		l.byID[is.ID] = &is
		l.Issues = append(l.Issues, &is)
	}
	for _, c := range b.Closed {
		is := l.byID[c.Issue]
		if is == nil {
			return fmt.Errorf("it closes issue %s, which was never opened", c.Issue)
		}
		c.At, c.By = at, actor
		is.Status, is.Closure = IssueClosed, &c
		is.History = append(is.History, IssueChange{Issue: is.ID, Op: IssueClosed, Reason: c.Reason, At: at, By: actor})
	}
	l.Bundles = append(l.Bundles, &b)
	return nil
}

// Recorded is what recording a bundle did for one module.
type Recorded struct {
	Module  string
	Bundle  string
	Already bool // recorded before at the same head: nothing written
	Cases   int
	Opened  []Issue
	Closed  []Closure
	Event   int64
	doc     string // the event's data
}

// RecordBundle records the bundle in dir in the issues log, as the
// identity a authenticates (who must be allowed issues): the bundle
// must verify, signed by a key the store trusts, as a finished run of
// this store's site. For every module it tested, each FAIL, ERROR or
// ABORTED case without an open issue opens one, owned by the party
// whose guarantee the measurement broke (the commissioning agent for a
// case that could not be graded); each open issue whose case passed in
// a signed retry amendment of its clause as it was closes, linking it.
// A bundle recorded before at the same journal head is not recorded
// again.
func (s *Store) RecordBundle(ctx context.Context, a Auth, dir string) ([]Recorded, error) {
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return nil, err
	}
	si, err := s.storeInfo(ctx)
	if err != nil {
		return nil, err
	}
	rep, err := verifiedBundle(dir, pv.P.EvidenceKeyList(), si.Site)
	if err != nil {
		return nil, &EvidenceError{Element: dir, Need: NeedSAT, Detail: err.Error()}
	}
	byModule, order := casesByModule(rep)
	var out []Recorded
	for _, m := range order {
		r, err := s.recordModule(ctx, a, pv, rep, dir, m, byModule[m])
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// casesByModule groups the bundle's cases (their last attempts) by the
// module each tested, in the order the plan runs them.
func casesByModule(rep *evidence.Report) (map[string][]results.Case, []string) {
	by := map[string][]results.Case{}
	var order []string
	for _, c := range rep.Results.Cases {
		m := c.Module
		if m == "" {
			m = rep.Results.Plan.Module
		}
		if _, ok := by[m]; !ok {
			order = append(order, m)
		}
		by[m] = append(by[m], c)
	}
	return by, order
}

// recordModule records one module's cases of a bundle.
func (s *Store) recordModule(ctx context.Context, a Auth, pv *policyVersion, rep *evidence.Report, dir, module string, cases []results.Case) (Recorded, error) {
	r := Recorded{Module: module, Bundle: rep.Bundle, Cases: len(cases)}
	el, err := s.element(ctx, s.db, module)
	if err != nil {
		return r, err
	}
	if el == nil {
		return r, &NotFoundError{Name: module}
	}
	log, err := s.issuesLog(ctx, s.db, module)
	if err != nil {
		return r, err
	}
	if log.recorded(rep.Bundle, rep.HeadHash, module) {
		r.Already = true
		return r, nil
	}
	at := s.clock()
	b := s.cxBundle(rep, dir, module, cases)
	n := countModuleIssues(log, module)
	for _, c := range cases {
		cx := b.caseOf(c.ID)
		open := log.openFor(module, c.ID)
		switch {
		case open == nil && needsIssue(c.Outcome):
			n++
			b.Opened = append(b.Opened, newIssue(fmt.Sprintf("%s-%d", module, n), module, b, cx, c, rep.Plan, at))
		case open != nil && c.Outcome == grade.Pass && cx.Segment > 0 && cx.ClauseDigest == open.ClauseDigest && cx.Record > open.Record:
			b.Closed = append(b.Closed, Closure{Issue: open.ID, Kind: IssueClosed, Bundle: rep.Bundle, Manifest: rep.ManifestDigest, Segment: cx.Segment, Record: cx.Record,
				Reason: fmt.Sprintf("case %s passed in retry amendment %d of bundle %s, run by %s", c.ID, cx.Segment, rep.Bundle, orUnknown(cx.RetriedBy))})
		}
	}
	doc, _ := json.Marshal(b)
	sum := sha256.Sum256(doc)
	reason := fmt.Sprintf("bundle %s recorded for %s: %d case(s), %d issue(s) opened, %d closed", rep.Bundle, module, len(cases), len(b.Opened), len(b.Closed))
	p, err := s.sign(ctx, a, pv, &Statement{Action: ActIssues, Element: module, Version: el.Version, Reason: reason, Digest: "sha256:" + hex.EncodeToString(sum[:])}, MayIssues, el.Module)
	if err != nil {
		return r, err
	}
	r.doc = string(doc)
	err = s.write(ctx, p, MayIssues, el.Module, func(tx *sql.Tx) error {
		seq, err := s.insertIssueEvent(ctx, tx, p, el, log.head, EvCommissioning, string(doc))
		r.Event = seq
		return err
	})
	r.Opened, r.Closed = b.Opened, b.Closed
	return r, err
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

func countModuleIssues(l *Log, module string) int {
	n := 0
	for _, is := range l.Issues {
		if is.Module == module {
			n++
		}
	}
	return n
}

// needsIssue: a case that failed, or could not be graded.
func needsIssue(outcome grade.Outcome) bool {
	return outcome == grade.Fail || outcome == grade.Error || outcome == grade.Aborted
}

// cxBundle is the record of a bundle's cases of one module.
func (s *Store) cxBundle(rep *evidence.Report, dir, module string, cases []results.Case) *CxBundle {
	rules := rep.Plan.CommissioningRules()
	b := &CxBundle{Bundle: rep.Bundle, Dir: dir, Manifest: rep.ManifestDigest, Head: rep.HeadHash, Plan: rep.Results.Plan.Digest,
		Level: rep.Results.Plan.Level, Module: module, Outcome: string(rep.Results.Outcome), SignedBy: rep.SignedBy, Rules: rules}
	last := lastAttempts(rep)
	seen := map[string]bool{}
	for _, c := range cases {
		pc := rep.Plan.Case(c.ID)
		cx := CxCase{ID: c.ID, Kind: c.Kind, Boundary: c.Boundary, Clause: c.Clause.Path, Outcome: string(c.Outcome)}
		if pc != nil {
			cx.Level, cx.ClauseDigest = rules.LevelOf(pc), pc.Clause.BoundaryDigest
		}
		if ac := last[c.ID]; ac != nil {
			cx.Record, cx.Segment = ac.Record, ac.Segment
			if ac.Segment > 0 && ac.Segment <= len(rep.Segments) {
				cx.RetriedBy = rep.Segments[ac.Segment-1].By
			}
		}
		b.Cases = append(b.Cases, cx)
		if bd := rep.Plan.BoundaryOf(c.Boundary); bd != nil && !seen[c.Boundary] {
			seen[c.Boundary] = true
			b.Boundaries = append(b.Boundaries, *bd)
		}
	}
	return b
}

func (b *CxBundle) caseOf(id string) CxCase {
	for _, c := range b.Cases {
		if c.ID == id {
			return c
		}
	}
	return CxCase{ID: id}
}

// lastAttempts is each case's last attempt in the bundle.
func lastAttempts(rep *evidence.Report) map[string]*evidence.AuditCase {
	out := map[string]*evidence.AuditCase{}
	for _, ac := range rep.CaseAudits {
		out[ac.End.Result.ID] = ac
	}
	return out
}

// newIssue is the issue a case that did not pass opens.
func newIssue(id, module string, b *CxBundle, cx CxCase, c results.Case, p *plan.Plan, at time.Time) Issue {
	rules := b.Rules
	is := Issue{ID: id, Module: module, Level: cx.Level, Case: c.ID, Kind: c.Kind, Boundary: c.Boundary, Clause: c.Clause.Path,
		ClauseDigest: cx.ClauseDigest, Outcome: string(c.Outcome), Bundle: b.Bundle, Manifest: b.Manifest, Record: cx.Record, Opened: at}
	if c.Outcome == grade.Fail {
		is.Severity = rules.SeverityOf(c.Kind)
		is.OwnerRole, is.Owner = ownerOf(c, p.BoundaryOf(c.Boundary))
		is.Description = failDescription(c)
	} else {
		is.Severity = rules.SeverityOf("error")
		is.OwnerRole, is.Owner = OwnerAgent, Agent
		is.Description = fmt.Sprintf("%s %s: %s", c.ID, c.Outcome, orUnknown(c.Reason))
	}
	if bd := p.BoundaryOf(c.Boundary); bd != nil {
		for _, sg := range bd.Signatures {
			if sg.Status == "signed" {
				is.Contacts = append(is.Contacts, sg.Party)
			}
		}
	}
	is.Due = at.Add(dueIn[is.Severity])
	return is
}

// ownerOf is whose guarantee a failed case broke: the supplier's when a
// check of its guarantee failed; else the consumer's, whose load or
// requirement the failed checks hold it to. With no record of the
// boundary's parties (a plan compiled before they were kept) the owner
// is named by module.
func ownerOf(c results.Case, bd *plan.Boundary) (role, party string) {
	role = OwnerConsumer
	for _, ch := range c.Checks {
		if ch.Outcome == grade.Fail && ch.Side == plan.Guarantee {
			role = OwnerSupplier
			break
		}
	}
	if bd == nil {
		return role, "the " + role + " of " + c.Boundary
	}
	side := bd.Consumer
	if role == OwnerSupplier {
		side = bd.Supplier
	}
	if side.Party == "" {
		return role, "the vendor of module " + side.Module
	}
	return role, side.Party
}

// failDescription says which checks failed, measured against limit.
func failDescription(c results.Case) string {
	var parts []string
	for _, ch := range c.Checks {
		if ch.Outcome != grade.Fail {
			continue
		}
		d := fmt.Sprintf("%s (%s, %s) on %s", ch.Check, ch.Kind, ch.Side, ch.Channel)
		if ch.Measured != nil && ch.Limit != nil {
			d += fmt.Sprintf(": measured %.4g %s against the limit %.4g %s", *ch.Measured, ch.Unit, *ch.Limit, ch.Unit)
		} else if ch.Detail != "" {
			d += ": " + ch.Detail
		}
		parts = append(parts, d)
	}
	if len(parts) == 0 {
		return c.ID + " failed"
	}
	return c.Title + ": " + strings.Join(parts, "; ")
}

// insertIssueEvent writes an issues-log event on the module, only if
// the module's log is still at head, the last event it was prepared
// against (two changes prepared against the same log cannot both
// land).
func (s *Store) insertIssueEvent(ctx context.Context, tx *sql.Tx, p *prepared, el *Element, head int64, kind, doc string) (int64, error) {
	var now int64
	if err := tx.QueryRowContext(ctx, s.q("SELECT coalesce(max(seq), 0) FROM events WHERE element = ? AND kind IN (?, ?)"), el.Key, EvCommissioning, EvIssue).Scan(&now); err != nil {
		return 0, s.wrap(err)
	}
	if now != head {
		return 0, &LogConflictError{Module: el.Key, Head: head, Now: now}
	}
	cur, err := s.element(ctx, tx, el.Key)
	if err != nil {
		return 0, err
	}
	if cur.LastAt.After(p.at) {
		return 0, &ClockError{Element: el.Key, At: p.at, Last: cur.LastAt, LastActor: s.lastActor(ctx, tx, el.Key)}
	}
	seq, err := s.insertEvent(ctx, tx, eventRow{at: p.at, element: el.Key, kind: kind, prevState: cur.State, state: cur.State, since: cur.Since,
		prevSerial: cur.Serial, serial: cur.Serial, actor: p.actor, reason: p.st.Reason, policy: p.policy,
		statement: p.statement, signature: p.signature, data: doc})
	if err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, s.q("UPDATE elements SET last_at = ? WHERE key = ?"), micros(p.at), el.Key)
	return seq, s.wrap(err)
}

// LogConflictError is a change of the issues log that lost a race: the
// module's log changed after it was prepared. Nothing was written.
type LogConflictError struct {
	Module    string
	Head, Now int64
}

func (e *LogConflictError) Error() string {
	return fmt.Sprintf("conflict: the issues log of %s changed after this change was prepared (at event %d, now %d): nothing was written; look again and retry", e.Module, e.Head, e.Now)
}

// AssignIssue gives an open issue to another owner, with a reason, as
// the identity a authenticates (who must be allowed issues).
func (s *Store) AssignIssue(ctx context.Context, a Auth, id, owner, reason string) (*Issue, error) {
	if strings.TrimSpace(owner) == "" {
		return nil, &IssueError{Issue: id, Detail: "give the new owner (--owner PARTY)"}
	}
	return s.changeIssue(ctx, a, IssueChange{Issue: id, Op: "assigned", Owner: owner, Reason: reason}, MayIssues)
}

// WaiveIssue closes an open issue without a passing retry, as the
// identity a authenticates, who must be allowed to waive (the
// accepting engineer), with the reason.
func (s *Store) WaiveIssue(ctx context.Context, a Auth, id, reason string) (*Issue, error) {
	return s.changeIssue(ctx, a, IssueChange{Issue: id, Op: IssueWaived, Reason: reason}, MayWaive)
}

func (s *Store) changeIssue(ctx context.Context, a Auth, ch IssueChange, may string) (*Issue, error) {
	if strings.TrimSpace(ch.Reason) == "" {
		return nil, &IssueError{Issue: ch.Issue, Detail: fmt.Sprintf("an issue is %s only with a reason (--reason TEXT)", ch.Op)}
	}
	module, _, ok := cutIssueID(ch.Issue)
	if !ok {
		return nil, &IssueError{Issue: ch.Issue, Detail: "not an issue id: ids are MODULE-N, as sat issues list shows them"}
	}
	el, err := s.element(ctx, s.db, module)
	if err != nil {
		return nil, err
	}
	if el == nil {
		return nil, &IssueError{Issue: ch.Issue, Detail: "no such issue (sat issues list)"}
	}
	log, err := s.issuesLog(ctx, s.db, module)
	if err != nil {
		return nil, err
	}
	is := log.Issue(ch.Issue)
	switch {
	case is == nil:
		return nil, &IssueError{Issue: ch.Issue, Detail: "no such issue (sat issues list)"}
	case !is.Open():
		return nil, &IssueError{Issue: ch.Issue, Detail: fmt.Sprintf("it is %s already (%s by %s): a closed issue does not change", is.Status, fmtTime(is.Closure.At), is.Closure.By)}
	}
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return nil, err
	}
	doc, _ := json.Marshal(ch)
	sum := sha256.Sum256(doc)
	reason := fmt.Sprintf("issue %s %s: %s", ch.Issue, ch.Op, ch.Reason)
	if ch.Owner != "" {
		reason = fmt.Sprintf("issue %s assigned to %s: %s", ch.Issue, ch.Owner, ch.Reason)
	}
	p, err := s.sign(ctx, a, pv, &Statement{Action: ActIssue, Element: module, Version: el.Version, Reason: reason, Digest: "sha256:" + hex.EncodeToString(sum[:])}, may, el.Module)
	if err != nil {
		return nil, err
	}
	err = s.write(ctx, p, may, el.Module, func(tx *sql.Tx) error {
		_, err := s.insertIssueEvent(ctx, tx, p, el, log.head, EvIssue, string(doc))
		return err
	})
	if err != nil {
		return nil, err
	}
	if s.dry.Active() {
		return is, nil
	}
	log, err = s.issuesLog(ctx, s.db, module)
	if err != nil {
		return nil, err
	}
	return log.Issue(ch.Issue), nil
}

// cutIssueID splits MODULE-N.
func cutIssueID(id string) (string, string, bool) {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 || i == len(id)-1 {
		return "", "", false
	}
	for _, r := range id[i+1:] {
		if r < '0' || r > '9' {
			return "", "", false
		}
	}
	return id[:i], id[i+1:], true
}

// checkIssues checks every issues-log event: its data is what its
// signed statement's digest says, and the log folds (no change of an
// issue never opened).
func (s *Store) checkIssues(ctx context.Context, problem func(string, ...any)) error {
	rows, err := s.db.QueryContext(ctx, s.q("SELECT seq, element, kind, data, statement FROM events WHERE kind IN (?, ?) ORDER BY seq"), EvCommissioning, EvIssue)
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	l := &Log{byID: map[string]*Issue{}}
	for rows.Next() {
		var seq int64
		var el, kind, data, stmt string
		if err := rows.Scan(&seq, &el, &kind, &data, &stmt); err != nil {
			return s.wrap(err)
		}
		sum := sha256.Sum256([]byte(data))
		st, perr := ParseStatement([]byte(stmt))
		if perr != nil || st.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
			problem("%s event %d of %s: its data is not what its signed statement's digest says: the issues log was changed behind the store's back", kind, seq, el)
			continue
		}
		if err := l.apply(seq, time.Time{}, kind, "", data); err != nil {
			problem("%s event %d of %s: %v", kind, seq, el, err)
		}
	}
	return s.wrap(rows.Err())
}
