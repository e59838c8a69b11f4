package facilityd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/lifecycle"
)

// The water-chemistry alarms: a loop's sample overdue, and its latest
// sample out of its limits. They are warnings: facilityd raises them
// (metrics, the journal, the log) and drains for them only when its
// actions say so.
const (
	ChemSampleOverdue = alarm.CoolantSampleOverdue
	ChemOutOfLimits   = alarm.CoolantOutOfLimits
)

// ChemistryConfig is where facilityd reads each loop's water chemistry:
// the lifecycle store, the limits file, and how often.
type ChemistryConfig struct {
	// Store is the lifecycle store (a SQLite file, or a postgres:// URL);
	// Password PostgreSQL's password by reference (env:NAME, file:PATH).
	Store    string `json:"store"`
	Password string `json:"password,omitempty"`
	// Limits is a limits file (seam.chemistry.limits/v1; "" the built-in
	// table: PG25, a sample every 30 days).
	Limits string `json:"limits,omitempty"`
	// Every is how often the samples are read (default 1 h).
	Every Duration `json:"every,omitempty"`
}

func (c *ChemistryConfig) check() error {
	if c == nil {
		return nil
	}
	if c.Store == "" {
		return fmt.Errorf("chemistry.store: the lifecycle store that holds the loops' samples is needed")
	}
	return nil
}

// chemWatch reads the loops' samples on the daemon's clock and raises
// or clears the chemistry alarms of each loop's domain.
type chemWatch struct {
	cfg     lifecycle.Config
	limits  *lifecycle.LimitsFile
	every   time.Duration
	index   *alarm.Index
	observe func(alarm.Observation)
	clock   clock.Clock
	log     *slog.Logger

	mu     sync.Mutex
	store  *lifecycle.Store
	active map[string]alarm.Observation // by source
}

// buildChemistry makes the chemistry watch when the config has one.
func (d *Daemon) buildChemistry() error {
	cc := d.Cfg.Chemistry
	if cc == nil {
		return nil
	}
	w := &chemWatch{every: cc.Every.D(time.Hour), index: d.Index, observe: d.Observe, clock: d.Clock, log: d.Log.With("part", "chemistry"),
		active: map[string]alarm.Observation{}}
	store := cc.Store
	if !isURL(store) {
		store = d.Cfg.Path(store)
	}
	w.cfg = lifecycle.Config{Store: store, Password: cc.Password, LookupEnv: d.lookupEnv, DryRun: d.rec}
	if cc.Limits != "" {
		lf, err := lifecycle.LoadLimits(d.Cfg.Path(cc.Limits))
		if err != nil {
			return fmt.Errorf("chemistry: %w", err)
		}
		w.limits = lf
	}
	d.chem = w
	return nil
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// CheckChemistry reads the samples once and raises or clears the
// chemistry alarms (Run does it every chemistry.every).
func (d *Daemon) CheckChemistry(ctx context.Context) error {
	if d.chem == nil {
		return fmt.Errorf("facilityd watches no water chemistry: its config has no chemistry section")
	}
	return d.chem.check(ctx)
}

// run checks now, then every w.every, until ctx is done.
func (w *chemWatch) run(ctx context.Context) {
	for {
		if err := w.check(ctx); err != nil {
			w.log.Warn("water chemistry not read: its alarms stay as they were", "err", err)
		}
		if err := w.clock.Sleep(ctx, w.every); err != nil {
			return
		}
	}
}

func (w *chemWatch) check(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.store == nil {
		s, err := lifecycle.Open(ctx, w.cfg)
		if err != nil {
			return err
		}
		w.store = s
	}
	now := w.clock.Now()
	findings, _, err := w.store.CheckChemistry(ctx, w.limits, now)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, f := range findings {
		o, err := w.observation(f, now)
		if err != nil {
			w.log.Warn("a chemistry finding of a loop the site's inventory does not have", "loop", f.Loop, "err", err)
			continue
		}
		id := o.SourceID()
		seen[id] = true
		w.active[id] = o
		w.observe(o)
	}
	for id, o := range w.active {
		if !seen[id] {
			o.Active, o.At, o.Detail = false, now, ""
			w.observe(o)
			delete(w.active, id)
		}
	}
	return nil
}

// observation is a finding as an alarm of its loop's domain; each
// measure out of limits is a source of its own.
func (w *chemWatch) observation(f lifecycle.ChemFinding, now time.Time) (alarm.Observation, error) {
	dom, err := w.index.Resolve(f.Loop)
	if err != nil {
		return alarm.Observation{}, err
	}
	t, src := ChemSampleOverdue, "chemistry:"+f.Loop
	if f.Kind == lifecycle.ChemOutOfLimit {
		t, src = ChemOutOfLimits, src+":"+f.Field
	}
	return alarm.Observation{Type: t, Domain: dom, Active: true, Kind: alarm.FromFacilityd, Source: src, At: now, Detail: f.Detail}, nil
}

func (w *chemWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.store != nil {
		w.store.Close()
		w.store = nil
	}
}
