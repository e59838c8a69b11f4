package lifecycle

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"

	"fmt"
	"math"
	"strings"
	"time"
)

// ActChemistry is the statement of a recorded water-chemistry sample;
// EvChemistry its event, on the loop.
const (
	ActChemistry = "chemistry"
	EvChemistry  = "chemistry"
)

// Sample is one lab result of a cooling loop's coolant. A measure not
// taken is nil; a sample has at least one.
type Sample struct {
	Loop     string    `json:"loop"`      // the loop's element key
	SampleID string    `json:"sample_id"` // the lab's id: unique per loop
	Taken    time.Time `json:"taken"`     // when it was drawn
	Lab      string    `json:"lab"`
	// Conductivity in µS/cm; PH; Glycol the glycol concentration in %
	// by volume; Particulates total suspended solids in mg/L.
	Conductivity *float64 `json:"conductivity_us_cm,omitempty"`
	PH           *float64 `json:"ph,omitempty"`
	Glycol       *float64 `json:"glycol_pct,omitempty"`
	Particulates *float64 `json:"particulates_mg_l,omitempty"`

	RecordedAt time.Time `json:"recorded_at,omitzero"`
	RecordedBy string    `json:"recorded_by,omitempty"`
	Event      int64     `json:"event,omitempty"`
}

// SampleError is a sample the store refuses, naming the loop, the
// sample and the field.
type SampleError struct {
	Loop, SampleID, Field, Detail string
}

func (e *SampleError) Error() string {
	where := "sample " + none(e.SampleID) + " of loop " + none(e.Loop)
	if e.Field != "" {
		where += ", " + e.Field
	}
	return where + ": " + e.Detail
}

func none(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// validate checks what the sample says before it is signed.
func (smp *Sample) validate(now time.Time) error {
	bad := func(field, format string, args ...any) error {
		return &SampleError{Loop: smp.Loop, SampleID: smp.SampleID, Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case strings.TrimSpace(smp.SampleID) == "":
		return bad("sample_id", "a sample needs the lab's sample id (--sample)")
	case strings.TrimSpace(smp.Lab) == "":
		return bad("lab", "a sample needs the lab that measured it (--lab)")
	case smp.Taken.IsZero():
		return bad("taken", "a sample needs the time it was drawn (--taken)")
	case smp.Taken.After(now):
		return bad("taken", "drawn at %s, after now (%s): check the date", smp.Taken.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case smp.Conductivity == nil && smp.PH == nil && smp.Glycol == nil && smp.Particulates == nil:
		return bad("", "no measure: give at least one of conductivity, pH, glycol, particulates")
	}
	for _, m := range []struct {
		field    string
		v        *float64
		min, max float64
	}{
		{"conductivity_us_cm", smp.Conductivity, 0, 1e6},
		{"ph", smp.PH, 0, 14},
		{"glycol_pct", smp.Glycol, 0, 100},
		{"particulates_mg_l", smp.Particulates, 0, 1e6},
	} {
		if m.v == nil {
			continue
		}
		if math.IsNaN(*m.v) || *m.v < m.min || *m.v > m.max {
			return bad(m.field, "%g is not a possible value (%g to %g)", *m.v, m.min, m.max)
		}
	}
	return nil
}

// RecordSample records a loop's sample (loop: the loop's key) as the
// identity a authenticates, who must be allowed chemistry: the sample
// and its signed event (whose statement carries the sample's digest)
// are written together. A sample id the loop has already is refused.
func (s *Store) RecordSample(ctx context.Context, a Auth, smp Sample) (Sample, error) {
	key, err := s.Resolve(ctx, smp.Loop)
	if err != nil {
		return Sample{}, err
	}
	el, err := s.element(ctx, s.db, key)
	if err != nil {
		return Sample{}, err
	}
	if el.Kind != "loop" {
		return Sample{}, &SampleError{Loop: key, SampleID: smp.SampleID, Detail: fmt.Sprintf("%s is a %s, not a cooling loop: samples are of loops (sat lifecycle list --kind loop)", key, el.Kind)}
	}
	smp.Loop, smp.Taken = key, smp.Taken.UTC().Truncate(time.Microsecond)
	smp.RecordedAt, smp.RecordedBy, smp.Event = time.Time{}, "", 0
	if err := smp.validate(s.clock()); err != nil {
		return Sample{}, err
	}
	doc, _ := json.Marshal(smp)
	sum := sha256.Sum256(doc)
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return Sample{}, err
	}
	reason := fmt.Sprintf("water chemistry sample %s of %s, drawn %s, by %s", smp.SampleID, key, smp.Taken.Format(time.RFC3339), smp.Lab)
	p, err := s.sign(ctx, a, pv, &Statement{Action: ActChemistry, Element: key, Version: el.Version, Reason: reason, Digest: "sha256:" + hex.EncodeToString(sum[:])}, MayChemistry, el.Module)
	if err != nil {
		return Sample{}, err
	}
	err = s.write(ctx, p, MayChemistry, el.Module, func(tx *sql.Tx) error {
		return s.insertSample(ctx, tx, p, el, &smp, string(doc))
	})
	if err != nil {
		return Sample{}, err
	}
	return smp, nil
}

func (s *Store) insertSample(ctx context.Context, tx *sql.Tx, p *prepared, el *Element, smp *Sample, doc string) error {
	var n int
	if err := tx.QueryRowContext(ctx, s.q("SELECT count(*) FROM chem_samples WHERE loop = ? AND sample_id = ?"), smp.Loop, smp.SampleID).Scan(&n); err != nil {
		return s.wrap(err)
	}
	if n > 0 {
		return &SampleError{Loop: smp.Loop, SampleID: smp.SampleID, Field: "sample_id", Detail: "the loop has a sample of this id already: samples are never changed; give the lab's id of a new sample"}
	}
	cur, err := s.element(ctx, tx, el.Key)
	if err != nil {
		return err
	}
	if cur.LastAt.After(p.at) {
		return &ClockError{Element: el.Key, At: p.at, Last: cur.LastAt, LastActor: s.lastActor(ctx, tx, el.Key)}
	}
	seq, err := s.insertEvent(ctx, tx, eventRow{at: p.at, element: el.Key, kind: EvChemistry, prevState: cur.State, state: cur.State, since: cur.Since,
		prevSerial: cur.Serial, serial: cur.Serial, actor: p.actor, reason: p.st.Reason, policy: p.policy,
		statement: p.statement, signature: p.signature, data: doc})
	if err != nil {
		return err
	}
	smp.RecordedAt, smp.RecordedBy, smp.Event = p.at, p.actor, seq
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO chem_samples (loop, sample_id, taken_at, lab, conductivity, ph, glycol_pct, particulates, recorded_at, actor, event)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		smp.Loop, smp.SampleID, micros(smp.Taken), smp.Lab, nullable(smp.Conductivity), nullable(smp.PH), nullable(smp.Glycol), nullable(smp.Particulates),
		micros(p.at), p.actor, seq); err != nil {
		return s.wrap(err)
	}
	_, err = tx.ExecContext(ctx, s.q("UPDATE elements SET last_at = ? WHERE key = ?"), micros(p.at), el.Key)
	return s.wrap(err)
}

func nullable(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

// Samples lists the samples of a loop (a key; "" every loop), by loop
// and the time each was drawn.
func (s *Store) Samples(ctx context.Context, loop string) ([]Sample, error) {
	q, args := "SELECT loop, sample_id, taken_at, lab, conductivity, ph, glycol_pct, particulates, recorded_at, actor, event FROM chem_samples", []any(nil)
	if loop != "" {
		key, err := s.Resolve(ctx, loop)
		if err != nil {
			return nil, err
		}
		q, args = q+" WHERE loop = ?", []any{key}
	}
	rows, err := s.db.QueryContext(ctx, s.q(q+" ORDER BY loop, taken_at, sample_id"), args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []Sample
	for rows.Next() {
		var smp Sample
		var taken, rec int64
		var c, ph, g, pm sql.NullFloat64
		if err := rows.Scan(&smp.Loop, &smp.SampleID, &taken, &smp.Lab, &c, &ph, &g, &pm, &rec, &smp.RecordedBy, &smp.Event); err != nil {
			return nil, s.wrap(err)
		}
		smp.Taken, smp.RecordedAt = fromMicros(taken), fromMicros(rec)
		smp.Conductivity, smp.PH, smp.Glycol, smp.Particulates = ptr(c), ptr(ph), ptr(g), ptr(pm)
		out = append(out, smp)
	}
	return out, s.wrap(rows.Err())
}

func ptr(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	return &v.Float64
}

// Loops lists the keys of the store's cooling loops.
func (s *Store) Loops(ctx context.Context) ([]string, error) {
	els, err := s.List(ctx, Filter{Kind: "loop"})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(els))
	for i, e := range els {
		out[i] = e.Key
	}
	return out, nil
}

// CheckChemistry evaluates every loop of the store that is sampled
// (installed until decommissioned) at now against lf (nil: the built-in
// table); it returns the findings and how many loops it checked.
// facilityd and sat lifecycle chem check both run it.
func (s *Store) CheckChemistry(ctx context.Context, lf *LimitsFile, now time.Time) ([]ChemFinding, int, error) {
	els, err := s.List(ctx, Filter{Kind: "loop"})
	if err != nil {
		return nil, 0, err
	}
	var loops []string
	for _, e := range els {
		if Sampled(e.State) {
			loops = append(loops, e.Key)
		}
	}
	samples, err := s.Samples(ctx, "")
	if err != nil {
		return nil, 0, err
	}
	return Evaluate(loops, samples, lf, now), len(loops), nil
}

// checkSamples checks each water-chemistry sample against its event:
// the event is the loop's, of kind chemistry, its data is the sample as
// recorded, and its signed statement carries the data's digest; and
// every chemistry event has its sample.
func (s *Store) checkSamples(ctx context.Context, problem func(string, ...any)) error {
	samples, err := s.Samples(ctx, "")
	if err != nil {
		return err
	}
	seen := map[int64]bool{}
	for _, smp := range samples {
		seen[smp.Event] = true
		var el, kind, data, stmt string
		err := s.db.QueryRowContext(ctx, s.q("SELECT element, kind, data, statement FROM events WHERE seq = ?"), smp.Event).Scan(&el, &kind, &data, &stmt)
		if errors.Is(err, sql.ErrNoRows) {
			problem("sample %s of %s names event %d, which the store does not have", smp.SampleID, smp.Loop, smp.Event)
			continue
		}
		if err != nil {
			return s.wrap(err)
		}
		rec := smp
		rec.RecordedAt, rec.RecordedBy, rec.Event = time.Time{}, "", 0
		doc, _ := json.Marshal(rec)
		sum := sha256.Sum256([]byte(data))
		st, perr := ParseStatement([]byte(stmt))
		switch {
		case el != smp.Loop || kind != EvChemistry:
			problem("sample %s of %s names event %d, a %s of %s", smp.SampleID, smp.Loop, smp.Event, kind, el)
		case string(doc) != data:
			problem("sample %s of %s is not what its event %d recorded (%s): it was changed behind the store's back", smp.SampleID, smp.Loop, smp.Event, data)
		case perr != nil || st.Digest != "sha256:"+hex.EncodeToString(sum[:]):
			problem("sample %s of %s: its event %d's data is not what its signed statement's digest says", smp.SampleID, smp.Loop, smp.Event)
		}
	}
	rows, err := s.db.QueryContext(ctx, s.q("SELECT seq, element FROM events WHERE kind = ?"), EvChemistry)
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var el string
		if err := rows.Scan(&seq, &el); err != nil {
			return s.wrap(err)
		}
		if !seen[seq] {
			problem("chemistry event %d of %s has no sample: a sample was deleted behind the store's back", seq, el)
		}
	}
	return s.wrap(rows.Err())
}
