package burnin

import (
	"context"
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/lifecycle"
)

// Gatekeeper is what the gate needs of the lifecycle store: its holds
// (the facilityd hold model: a node is in the pool only with none) and
// the move to provisioned on a baseline. *lifecycle.Store is one.
type Gatekeeper interface {
	lifecycle.Holder
	Provision(ctx context.Context, a lifecycle.Auth, file, reason string) (*lifecycle.Moved, error)
}

var _ Gatekeeper = (*lifecycle.Store)(nil)

// GateAction is what the gate did to one node.
type GateAction struct {
	Node   string `json:"node"`
	Action string `json:"action"` // "provisioned" or "held"
	Reason string `json:"reason"`
	Err    string `json:"error,omitempty"`
}

// Gate applies the burn-in: a passing node has its burn-in hold (set by
// whoever runs the gate) released and moves to provisioned on its
// baseline file; a failing node's burn-in hold is set again with its
// first reasons (released and set: a hold set already keeps its old
// reason), so run it while the nodes are still reserved. baselines maps
// node names to their baseline files. Errors per node are in the
// actions; the gate goes on.
func Gate(ctx context.Context, g Gatekeeper, a lifecycle.Auth, res *Result, baselines map[string]string, bundle string) []GateAction {
	var out []GateAction
	for _, n := range res.Nodes {
		act := GateAction{Node: n.Name}
		if n.Passed {
			act.Action, act.Reason = "provisioned", "burn-in passed (evidence "+bundle+")"
			err := g.ReleaseHold(ctx, a, n.Name, lifecycle.HoldBurnIn, "", act.Reason)
			if err == nil {
				file := baselines[n.Name]
				if file == "" {
					err = fmt.Errorf("no baseline file for %s", n.Name)
				} else {
					_, err = g.Provision(ctx, a, file, act.Reason)
				}
			}
			if err != nil {
				act.Err = err.Error()
			}
			out = append(out, act)
			continue
		}
		rs := n.Reasons()
		reason := strings.Join(rs[:min(3, len(rs))], "; ")
		if len(rs) > 3 {
			reason += fmt.Sprintf("; and %d more (evidence %s)", len(rs)-3, bundle)
		}
		act.Action, act.Reason = "held", "burn-in failed: "+reason
		err := g.ReleaseHold(ctx, a, n.Name, lifecycle.HoldBurnIn, "", "burn-in failed: the hold is set again with the reason")
		if err == nil {
			_, err = g.SetHold(ctx, a, n.Name, lifecycle.HoldBurnIn, act.Reason)
		}
		if err != nil {
			act.Err = err.Error()
		}
		out = append(out, act)
	}
	return out
}

// Hold sets a burn-in hold on every node before the burn-in starts.
func Hold(ctx context.Context, g lifecycle.Holder, a lifecycle.Auth, nodes []Node, reason string) error {
	for _, n := range nodes {
		if _, err := g.SetHold(ctx, a, n.Name, lifecycle.HoldBurnIn, reason); err != nil {
			return fmt.Errorf("burn-in hold on %s: %w", n.Name, err)
		}
	}
	return nil
}
