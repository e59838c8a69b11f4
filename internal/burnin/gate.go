package burnin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/lifecycle"
)

// Provisioner moves a node to provisioned on its baseline: the
// lifecycle store's Provision (a node commissioned; or, for a node in
// service, the parts of it that came back from RMA, which releases its
// burnin:swap hold). *lifecycle.Store is one.
type Provisioner interface {
	Provision(ctx context.Context, a lifecycle.Auth, file, reason string) (*lifecycle.Moved, error)
}

var _ Provisioner = (*lifecycle.Store)(nil)

// Owner is the burn-in's hold in the ledger: burnin:RESERVATION.
func Owner(reservation string) hold.Owner { return hold.Of(hold.Burnin, reservation) }

// GateAction is what the gate did to one node.
type GateAction struct {
	Node   string `json:"node"`
	Action string `json:"action"` // "provisioned", "passed" (no store), "held" or "retest"
	Reason string `json:"reason"`
	Err    string `json:"error,omitempty"`
}

// Hold places the burn-in's hold on every node before it starts, kept
// by its reservation (a Slurm reservation, a Kubernetes taint): the
// ledger takes the nodes out of users' work and does not drain them,
// so the burn-in's own jobs run. A node some other owner holds (a
// facility alarm) stays drained, and its burn-in fails.
func Hold(ctx context.Context, l *ledger.Ledger, reservation, by, why string, nodes []Node) error {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	_, err := l.Place(ctx, hold.Hold{Owner: Owner(reservation), Nodes: names, Why: why, By: by, Reservation: reservation})
	if err != nil {
		return fmt.Errorf("the burn-in's hold %s: %w", Owner(reservation), err)
	}
	return nil
}

// Gate applies the burn-in, while the nodes are still reserved: each
// node that passed is provisioned on its baseline file (p nil: no
// lifecycle store, nothing to provision); the burn-in's hold is
// released from its nodes (res.Nodes: a re-test of some nodes leaves
// the others' holds), and from each node that passed the other burn-in
// holds that wait for one (a firmware rollout's; not burnin:swap); each node that failed is held again, by the same
// owner, with its first reasons and no reservation, so that the ledger
// drains it and it stays out of the pool once the reservation ends. A
// node only implicated (VerdictRetest, from recorded outputs) is
// neither provisioned nor held: its action is "retest". baselines maps
// node names to their baseline files. Errors per node are in the
// actions; the gate goes on.
func Gate(ctx context.Context, l *ledger.Ledger, p Provisioner, a lifecycle.Auth, reservation, by string, res *Result, baselines map[string]string, bundle string) []GateAction {
	owner := Owner(reservation)
	out := make([]GateAction, 0, len(res.Nodes))
	for _, n := range res.Nodes {
		act := GateAction{Node: n.Name}
		switch n.Verdict() {
		case VerdictHeld:
			act.Action, act.Reason = "held", fmt.Sprintf("burn-in failed (evidence %s): %s", bundle, firstReasons(n))
			out = append(out, act)
			continue
		case VerdictRetest:
			act.Action, act.Reason = "retest", fmt.Sprintf("implicated, re-test needed (evidence %s): %s", bundle, firstReasons(n))
			out = append(out, act)
			continue
		}
		act.Action, act.Reason = "passed", "burn-in passed (evidence "+bundle+")"
		if p != nil {
			act.Action = "provisioned"
			file := baselines[n.Name]
			var err error
			if file == "" {
				err = fmt.Errorf("no baseline file for %s", n.Name)
			} else {
				_, err = p.Provision(ctx, a, file, act.Reason)
			}
			switch {
			case errors.Is(err, lifecycle.ErrNothingToProvision):
				act.Action = "passed" // in service already: its baseline is the evidence
			case err != nil:
				act.Err = err.Error()
			}
		}
		out = append(out, act)
	}
	names := make([]string, len(res.Nodes))
	for i, n := range res.Nodes {
		names[i] = n.Name
	}
	// the burn-in's nodes only: a node the owner holds from an earlier
	// burn-in that this one did not grade stays held
	if _, err := l.Release(ctx, owner, names, by, "burn-in ended (evidence "+bundle+")"); err != nil {
		for i := range out {
			if out[i].Err == "" {
				out[i].Err = "releasing the burn-in's hold: " + err.Error()
			}
		}
	}
	releaseAwaiting(ctx, l, owner, by, bundle, out)
	for i, act := range out {
		if act.Action != "held" {
			continue
		}
		if _, err := l.Place(ctx, hold.Hold{Owner: owner, Nodes: []string{act.Node}, Why: act.Reason, By: by}); err != nil {
			out[i].Err = err.Error()
		}
	}
	return out
}

// releaseAwaiting releases, on each node that passed, the other
// burn-in holds that wait for a passing burn-in: a firmware rollout's
// (burnin:ROLLOUT), an earlier burn-in's that held the node. Not
// burnin:swap, which the swapped part's baseline releases (the
// lifecycle store's Provision).
func releaseAwaiting(ctx context.Context, l *ledger.Ledger, owner hold.Owner, by, bundle string, out []GateAction) {
	var passed []string
	at := map[string]int{}
	for i, act := range out {
		if (act.Action == "passed" || act.Action == "provisioned") && act.Err == "" {
			passed = append(passed, act.Node)
			at[act.Node] = i
		}
	}
	if len(passed) == 0 {
		return
	}
	on, err := l.On(ctx, passed)
	if err != nil {
		for _, n := range passed {
			out[at[n]].Err = "reading the node's other burn-in holds: " + err.Error()
		}
		return
	}
	for _, n := range passed {
		for _, h := range on[n] {
			if h.Owner.Kind() != hold.Burnin || h.Owner == owner || h.Owner == hold.Swap {
				continue
			}
			if _, err := l.Release(ctx, h.Owner, []string{n}, by, "burn-in passed (evidence "+bundle+")"); err != nil {
				out[at[n]].Err = fmt.Sprintf("releasing %s: %v", h.Owner, err)
			}
		}
	}
}

// firstReasons are a node's first three reasons, and how many more.
func firstReasons(n *NodeResult) string {
	rs := n.Reasons()
	reason := strings.Join(rs[:min(3, len(rs))], "; ")
	if len(rs) > 3 {
		reason += fmt.Sprintf("; and %d more", len(rs)-3)
	}
	return reason
}
