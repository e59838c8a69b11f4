package drain

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
)

// This file is facilityd's only use of the evidence package: every
// action goes into a hash-chained journal, one bundle per start of the
// daemon (journal/<UTC start time>), through Create, Append, Sync and
// Close, and is verified with Audit.

// Journal records facilityd's actions.
type Journal interface {
	Record(kind string, data any) error
}

// Record kinds of facilityd's journal.
const (
	RecStart      = "facilityd_start"
	RecAlarm      = "alarm"      // a raise or clear
	RecHold       = "hold"       // a hold placed
	RecRelease    = "release"    // a hold released
	RecDrain      = "drain"      // nodes drained
	RecUndrain    = "undrain"    // nodes returned
	RecReason     = "reason"     // reasons updated
	RecRefused    = "refused"    // something refused: storm guard, release, request
	RecSuppressed = "suppressed" // a drain suppressed
	RecOverride   = "override"   // an operator's own action seen
	RecSignal     = "signal"     // checkpoint_now sent
	RecError      = "error"      // the scheduler refused or timed out
	RecRequest    = "request"    // an approved request taken
	RecDryRun     = "dry_run"    // what a dry run would have done
)

// Bundle is a journal in an evidence bundle.
type Bundle struct {
	mu sync.Mutex
	b  *evidence.Bundle
}

// OpenJournal starts this run's journal under dir/journal.
func OpenJournal(dir string, c clock.Clock) (*Bundle, string, error) {
	path := filepath.Join(dir, "journal", c.Now().UTC().Format("20060102T150405.000Z"))
	b, err := evidence.Create(path, c, evidence.Options{})
	if err != nil {
		return nil, "", fmt.Errorf("facilityd journal: %w", err)
	}
	return &Bundle{b: b}, path, nil
}

// Record appends and syncs: an action is durable before it is reported.
func (j *Bundle) Record(kind string, data any) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.b.Append(kind, "", data); err != nil {
		return fmt.Errorf("facilityd journal: %w", err)
	}
	if err := j.b.Sync(); err != nil {
		return fmt.Errorf("facilityd journal: %w", err)
	}
	return nil
}

// Close syncs and closes the journal.
func (j *Bundle) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.b.Close()
}

// VerifyJournals audits every journal under dir/journal and returns how
// many records each holds, or what is wrong.
func VerifyJournals(dir string) (map[string]int, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "journal", "*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	if len(paths) == 0 {
		return nil, fmt.Errorf("no journal under %s", filepath.Join(dir, "journal"))
	}
	out := map[string]int{}
	var bad []string
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			continue
		}
		rep, err := evidence.Audit(p, evidence.AuditOptions{})
		if err != nil {
			return out, fmt.Errorf("journal %s: %w", p, err)
		}
		if !rep.OK() {
			bad = append(bad, fmt.Sprintf("%s: %s", p, strings.Join(rep.Problems, "; ")))
			continue
		}
		out[p] = rep.Records
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("journal does not verify: %s", strings.Join(bad, "; "))
	}
	return out, nil
}

// nop is a journal that records nothing (tests, status).
type nop struct{}

func (nop) Record(string, any) error { return nil }

// Memory is a journal in memory, for tests.
type Memory struct {
	mu      sync.Mutex
	Records []MemRecord
}

// MemRecord is one record of a Memory journal.
type MemRecord struct {
	At   time.Time
	Kind string
	Data any
}

// Record keeps the record.
func (m *Memory) Record(kind string, data any) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Records = append(m.Records, MemRecord{time.Now(), kind, data})
	return nil
}

// Kinds lists the kinds recorded, in order.
func (m *Memory) Kinds() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, len(m.Records))
	for i, r := range m.Records {
		out[i] = r.Kind
	}
	return out
}
