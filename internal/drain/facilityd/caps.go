package facilityd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/capping"
	"github.com/seamdc/seam/internal/capping/apply"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/drain"
)

// CapDrift is the alarm of a power cap that a BMC no longer has (a BMC
// reset, a firmware update): a warning of the node's rack, raised when
// the reconciler reads the drift and cleared once the cap reads back
// again. It drains nothing unless facilityd's actions say so.
const CapDrift = alarm.PowerCapDrift

// Journal record kinds of the cap reconciler.
const (
	KindCapDrift   = "cap_drift"
	KindCapReapply = "cap_reapply"
)

// CapsConfig is the caps facilityd keeps applied: a caps file (sat cap
// apply's), written through the BMCs of the binding's bmcs section,
// whose allow-list must declare PowerLimit writable.
type CapsConfig struct {
	File string `json:"file"`
	// Binding is the binding directory whose bmcs section reaches the
	// BMCs (default: the config's binding).
	Binding string `json:"binding,omitempty"`
	// Every is how often the caps are read back (default 1 min).
	Every Duration `json:"every,omitempty"`
	// Reapply writes a drifted cap back (default true); false only
	// alarms.
	Reapply *bool `json:"reapply,omitempty"`
}

func (c *CapsConfig) check(binding string) error {
	if c == nil {
		return nil
	}
	switch {
	case c.File == "":
		return errors.New("caps.file: the caps file to keep applied is needed (contractc budget --cap --caps-out writes one)")
	case binding == "" && c.Binding == "":
		return errors.New("caps: a binding with a bmcs section is needed to reach the BMCs: set binding or caps.binding")
	}
	return nil
}

// capWatch reads the caps back on the daemon's clock, alarms on drift
// and writes drifted caps back.
type capWatch struct {
	targets []apply.Target
	opt     apply.Options
	every   time.Duration
	reapply bool
	index   *alarm.Index
	observe func(alarm.Observation)
	journal drain.Journal // nil: none
	clock   clock.Clock
	log     *slog.Logger

	mu     sync.Mutex
	active map[string]alarm.Observation // by node key
}

// buildCaps makes the cap reconciler when the config has a caps section.
func (d *Daemon) buildCaps() error {
	cc := d.Cfg.Caps
	if cc == nil {
		return nil
	}
	caps, err := capping.ReadFile(d.Cfg.Path(cc.File))
	if err != nil {
		return fmt.Errorf("caps: %w", err)
	}
	bdir := cc.Binding
	if bdir == "" {
		bdir = d.Cfg.Binding
	}
	targets, opt, err := apply.Targets(d.Cfg.Path(bdir), caps, d.lookupEnv, io.Discard)
	if err != nil {
		return fmt.Errorf("caps: %w", err)
	}
	opt.Clock, opt.Log, opt.Dry = d.Clock, d.Log.With("part", "caps"), d.rec
	w := &capWatch{targets: targets, opt: opt, every: cc.Every.D(time.Minute), reapply: cc.Reapply == nil || *cc.Reapply,
		index: d.Index, observe: d.Observe, clock: d.Clock, log: d.Log.With("part", "caps"), active: map[string]alarm.Observation{}}
	if d.journal != nil {
		w.journal = d.journal
	}
	d.caps = w
	return nil
}

// ReconcileCaps reads the caps back once, alarms on drift and writes
// drifted caps back (Run does it every caps.every). It returns the
// drifts it found.
func (d *Daemon) ReconcileCaps(ctx context.Context) ([]apply.Result, error) {
	if d.caps == nil {
		return nil, fmt.Errorf("facilityd keeps no caps: its config has no caps section")
	}
	return d.caps.check(ctx), nil
}

func (w *capWatch) run(ctx context.Context) {
	for {
		w.check(ctx)
		if err := w.clock.Sleep(ctx, w.every); err != nil {
			return
		}
	}
}

// check reads every cap, and for each drifted one raises CapDrift,
// journals it, writes it back (when reapply) and clears the alarm once
// it reads back.
func (w *capWatch) check(ctx context.Context) []apply.Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	read := apply.Run(ctx, apply.Read, w.targets, w.opt)
	var drifted []apply.Target
	var found []apply.Result
	for i, r := range read {
		t := w.targets[i]
		if r.Err != nil {
			w.log.Warn("power cap not read back: its alarm stays as it was", "node", t.Node, "bmc", t.BMC, "err", r.Error)
			continue
		}
		if !apply.Drifted(r, t) {
			w.clear(t, now, "the cap reads back")
			continue
		}
		found = append(found, r)
		drifted = append(drifted, t)
		detail := fmt.Sprintf("BMC %s (node %s): %s has %.0f W, the caps file says %.0f W", t.BMC, t.Node, r.Control, r.ReadBackW, t.Watts)
		w.raise(t, now, detail)
		w.record(KindCapDrift, r)
	}
	if !w.reapply || len(drifted) == 0 {
		return found
	}
	for i, r := range apply.Run(ctx, apply.Apply, drifted, w.opt) {
		t := drifted[i]
		w.record(KindCapReapply, r)
		if r.Would {
			w.log.Info("a drifted power cap would be written back: its alarm stays, as nothing was written", "node", t.Node, "bmc", t.BMC, "watts", t.Watts)
			continue
		}
		if r.Err != nil {
			w.log.Warn("a drifted power cap was not written back", "node", t.Node, "bmc", t.BMC, "err", r.Error)
			w.raise(t, w.clock.Now(), r.Error)
			continue
		}
		w.log.Info("a drifted power cap written back", "node", t.Node, "bmc", t.BMC, "watts", t.Watts)
		w.clear(t, w.clock.Now(), "written back")
	}
	return found
}

func (w *capWatch) observation(t apply.Target, at time.Time, active bool, detail string) (alarm.Observation, bool) {
	if o, ok := w.active[t.Key]; ok {
		o.Active, o.At, o.Detail = active, at, detail
		return o, true
	}
	rack := t.Key
	if i := lastSlash(rack); i > 0 {
		rack = rack[:i]
	}
	dom, err := w.index.Resolve(rack)
	if err != nil {
		w.log.Warn("a capped node whose rack the site's inventory does not have", "node", t.Node, "rack", rack, "err", err)
		return alarm.Observation{}, false
	}
	return alarm.Observation{Type: CapDrift, Domain: dom, Active: active, Kind: alarm.FromFacilityd, Source: "caps:" + t.Key, At: at, Detail: detail}, true
}

func (w *capWatch) raise(t apply.Target, at time.Time, detail string) {
	o, ok := w.observation(t, at, true, detail)
	if !ok {
		return
	}
	w.active[t.Key] = o
	w.observe(o)
}

func (w *capWatch) clear(t apply.Target, at time.Time, detail string) {
	if _, ok := w.active[t.Key]; !ok {
		return
	}
	o, _ := w.observation(t, at, false, detail)
	delete(w.active, t.Key)
	w.observe(o)
}

func (w *capWatch) record(kind string, r apply.Result) {
	if w.journal == nil {
		return
	}
	if err := w.journal.Record(kind, r); err != nil {
		w.log.Warn("journal: a cap record not written", "kind", kind, "err", err)
	}
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}
