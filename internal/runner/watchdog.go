package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/seamdc/seam/internal/loadbank"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/results"
)

// A load bank whose heartbeat watchdog tripped has dropped its load and
// latched a fault: the case it was driving cannot be graded, and the
// bank is reset only after it reads 0 kW and a person confirms the reset
// (the simulator, on the simulated site). The trip is journalled once
// (a "watchdog" record), logged and shown, with how late the runner's
// heartbeats were.

// watchdogRecord is the data of a watchdog record.
type watchdogRecord struct {
	LoadBank       string    `json:"load_bank"`
	Fault          int       `json:"fault"`
	FaultName      string    `json:"fault_name"`
	WatchdogS      float64   `json:"watchdog_s"`
	HeartbeatLateS float64   `json:"heartbeat_late_s"`
	AppliedKW      float64   `json:"applied_kw"`
	At             time.Time `json:"at"`
	Message        string    `json:"message"`
}

// bankTripped records a watchdog trip of b that st shows, once per trip,
// and returns its message. A trip seen during a case ends the case.
func (r *Runner) bankTripped(b *loadbank.Bank, st loadbank.Status, caseID string) string {
	r.mu.Lock()
	if msg, seen := r.trips[b.ID]; seen {
		r.mu.Unlock()
		return msg
	}
	w := b.Watchdog()
	now := r.clk.Now()
	late := b.HeartbeatLate(now.Add(-2*w.After), now)
	msg := fmt.Sprintf("load bank %s tripped its heartbeat watchdog: fault %d (%s); the runner's heartbeats arrived up to %s late (the watchdog allows %s)",
		b.ID, st.Fault, st.FaultName, late.Round(time.Millisecond), w.After)
	r.trips[b.ID] = msg
	stop := r.caseStop
	if caseID != "" && r.current == caseID {
		r.tripped = msg
	} else {
		stop = nil
	}
	r.mu.Unlock()
	r.append("watchdog", caseID, watchdogRecord{LoadBank: b.ID, Fault: st.Fault, FaultName: st.FaultName, WatchdogS: w.After.Seconds(),
		HeartbeatLateS: late.Seconds(), AppliedKW: st.AppliedKW, At: st.At, Message: msg})
	r.log.Error("load bank watchdog tripped", "load_bank", b.ID, "fault", st.Fault, "heartbeat_late_s", late.Seconds(), "case", caseID)
	r.prog.line("WATCHDOG: " + msg)
	if stop != nil {
		stop()
	}
	return msg
}

// caseTrip is the watchdog trip that ended the case running, or "".
func (r *Runner) caseTrip() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tripped
}

// resetTrip resets a bank that tripped its watchdog: only once it reads
// 0 kW and the operator confirmed, step names where in the case.
func (r *Runner) resetTrip(ctx context.Context, cr *caseRun, step string, b *loadbank.Bank, st loadbank.Status) error {
	msg := r.bankTripped(b, st, "")
	if !b.AtZero(st) {
		err := fmt.Errorf("%s, and it still reads %.1f kW: it is not reset", msg, st.AppliedKW)
		r.Abort(results.CauseFatal, err.Error(), nil)
		return err
	}
	p := Prompt{Case: cr.c.ID, Step: step, Action: fmt.Sprintf("load bank %s tripped its heartbeat watchdog (fault %d, %s) and reads %.1f kW: check it, then confirm that sat may reset its fault",
		b.ID, st.Fault, st.FaultName, st.AppliedKW), Expect: "the bank resets, enabled at 0 kW"}
	a, err := r.cfg.Operator.Confirm(ctx, p)
	if err != nil {
		return r.unconfirmed(ctx, err)
	}
	r.confirmed(cr, p, a)
	after, err := b.Prepare(ctx)
	r.append("watchdog_reset", cr.c.ID, map[string]any{"load_bank": b.ID, "by": a.By, "status": after.String(), "error": errText(err)})
	if err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.trips, b.ID)
	r.mu.Unlock()
	r.log.Warn("load bank reset after its watchdog tripped", "load_bank", b.ID, "by", a.By)
	return nil
}

// watchBanks looks for a watchdog trip in one read of a device that is
// a load bank of the case.
func (s *sampler) watchBanks(ps probe.Sample) {
	for _, b := range s.banks[ps.Device] {
		if b.Watchdog() == nil {
			continue
		}
		if st, err := b.StatusOf(ps.Readings, ps.Err); err == nil && b.Tripped(st) {
			s.r.bankTripped(b, st, s.caseID)
		}
	}
}
