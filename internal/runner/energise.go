package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/results"
)

// acceptRisk asks the operator to accept the risk of energising.
func (r *Runner) acceptRisk(ctx context.Context) error {
	p := r.cfg.Plan
	peak := map[string]float64{}
	for _, c := range p.Cases {
		for _, s := range c.Steps {
			for _, kw := range []*float64{s.KW, s.HighKW} {
				if kw != nil && s.LoadBank != "" && *kw > peak[s.LoadBank] {
					peak[s.LoadBank] = *kw
				}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sat is about to energise %s (%s site) with the %s plan: %d cases, %d load banks:\n",
		p.Header.Site, r.cfg.Site.Kind, strings.ToUpper(p.Header.Level), len(p.Cases), len(p.LoadBanks))
	for _, lb := range p.LoadBanks {
		fmt.Fprintf(&b, "  %s at %s: up to %.0f kW of its %.0f kW rating\n", lb.ID, lb.Module, peak[lb.ID], lb.RatingKW)
	}
	b.WriteString("Interlocks abort the run and drop the load on any safety channel out of limits or silent.")
	how, err := r.cfg.Operator.AcceptRisk(ctx, b.String())
	if err != nil {
		r.append("accept_risk", "", map[string]any{"accepted": false, "by": r.cfg.Operator.Who(), "reason": err.Error()})
		return err
	}
	r.append("accept_risk", "", map[string]any{"accepted": true, "by": r.cfg.Operator.Who(), "how": how, "summary": b.String()})
	r.log.Info("risk accepted", "by", r.cfg.Operator.Who(), "how", how)
	return nil
}

// prepareBanks resets latched faults and enables every bank at 0 kW.
func (r *Runner) prepareBanks(ctx context.Context) error {
	for _, id := range r.cfg.Site.bankIDs() {
		st, err := r.cfg.Site.Banks[id].Prepare(ctx)
		data := map[string]any{"status": st.String()}
		if err != nil {
			data["error"] = err.Error()
		}
		r.append("prepare", "", mergeID(data, "load_bank", id))
		if err != nil {
			return fmt.Errorf("preparing load bank %s: %w", id, err)
		}
	}
	return nil
}

func mergeID(m map[string]any, k, v string) map[string]any {
	m[k] = v
	return m
}

// heartbeatFailures is how many heartbeat writes in a row may fail
// before the run aborts, once anything is energised: by then the bank's
// watchdog is about to drop the load on its own. Before that, preflight
// reports an unreachable bank.
const heartbeatFailures = 3

// startHeartbeats feeds every bank's watchdog until ctx is done.
func (r *Runner) startHeartbeats(ctx context.Context) *clock.Group {
	g := clock.NewGroup(r.clk)
	for _, id := range r.cfg.Site.bankIDs() {
		b := r.cfg.Site.Banks[id]
		g.Go(func() {
			b.Heartbeat(ctx, r.cfg.Heartbeat, func(err error, n int) {
				r.log.Warn("heartbeat write failed", "load_bank", id, "in_a_row", n, "err", err)
				r.append("heartbeat", "", map[string]any{"load_bank": id, "in_a_row": n, "error": err.Error()})
				if n == heartbeatFailures && r.energised.Load() {
					r.Abort(results.CauseFatal, fmt.Sprintf("lost the heartbeat to load bank %s (%d writes in a row failed: %v); its watchdog will drop the load", id, n, err), nil)
				}
			})
		})
	}
	return g
}
