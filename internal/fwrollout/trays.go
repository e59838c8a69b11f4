package fwrollout

import (
	"context"
	"fmt"
	"sync"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/firmware"
	"github.com/seamdc/seam/internal/fwupdate"
)

// trays updates the stage's trays, Parallel at once: a pool of workers
// that take the next tray in turn (participants of the clock, so that
// they run in lockstep with a simulated site).
func (r *rollout) trays(ctx context.Context, st *firmware.Stage) []TrayRecord {
	out := make([]TrayRecord, len(st.Trays))
	var mu sync.Mutex
	next := 0
	g := clock.NewGroup(r.cfg.Clock)
	for range min(r.cfg.Parallel, len(st.Trays)) {
		g.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(st.Trays) || ctx.Err() != nil {
					return
				}
				out[i] = r.tray(ctx, st.Number, st.Trays[i])
			}
		})
	}
	g.Wait()
	for i, t := range st.Trays {
		if out[i].Tray == "" { // not reached: the rollout was cancelled
			out[i] = TrayRecord{Stage: st.Number, Tray: t.Key, Node: t.Node, Error: fmt.Sprintf("%s: not updated: %v", t.Key, context.Cause(ctx))}
		}
	}
	return out
}

// tray applies one tray's updates on its BMC, journaling every step.
func (r *rollout) tray(ctx context.Context, stage int, tp *firmware.TrayPlan) TrayRecord {
	rec := TrayRecord{Stage: stage, Tray: tp.Key, Node: tp.Node}
	if done, ok := r.cfg.State.Trays[tp.Key]; ok {
		r.cfg.Progress("stage %d: %s finished by the interrupted run", stage, tp.Key)
		return done
	}
	tgt, err := r.cfg.Target(tp.Key)
	if err != nil {
		rec.Error = fmt.Sprintf("%s: %v", tp.Key, err)
		_ = r.record(KindTray, rec, true)
		return rec
	}
	rec.BMC = tgt.BMC
	ups := make([]fwupdate.Update, len(tp.Updates))
	for i, u := range tp.Updates {
		ups[i] = fwupdate.FromPlan(u, "")
		ups[i].ImageFile = r.cfg.ImageFiles[u.SHA256]
		if p, ok := r.cfg.State.Updates[updateKey(tp.Key, u.Component)]; ok {
			ups[i].Resume, ups[i].MaybeSent = p.Monitor, p.Sending
		}
		if r.cfg.Grant != nil {
			if ups[i].ImageURI, err = r.cfg.Grant(tp.Key, tgt.BMC, u); err != nil {
				rec.Error = fmt.Sprintf("%s (%s): %s %s, step update: the image server: %v", nodeOr(tp), tgt.BMC, u.Component, u.To, err)
				_ = r.record(KindTray, rec, true)
				return rec
			}
		}
	}
	opt := r.cfg.Update
	opt.Login, opt.URL = tgt.Login, tgt.URL
	var jerr error
	monitors := map[string]string{} // the last made durable, by component
	obs := func(e fwupdate.Event) {
		// the intent and a new task monitor must be durable before the
		// rollout goes on: a resumed one follows them
		durable := e.Sending || (e.TaskMonitor != "" && e.TaskMonitor != monitors[e.Component])
		if e.TaskMonitor != "" {
			monitors[e.Component] = e.TaskMonitor
		}
		if err := r.record(KindEvent, EventRecord{Stage: stage, Tray: tp.Key, Event: e}, durable); err != nil && jerr == nil {
			jerr = err
		}
	}
	results, err := fwupdate.Apply(ctx, r.cfg.Clock, nil, nodeOr(tp), tgt.BMC, ups, opt, obs)
	rec.Results = results
	if err == nil {
		err = jerr
	}
	if err != nil {
		rec.Error = err.Error()
	}
	if jerr := r.record(KindTray, rec, true); jerr != nil && rec.Error == "" {
		rec.Error = jerr.Error()
	}
	return rec
}

func nodeOr(tp *firmware.TrayPlan) string {
	if tp.Node != "" {
		return tp.Node
	}
	return tp.Key
}

func updateKey(tray, component string) string { return tray + "\x00" + component }
