package satcmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/gputools"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// simBurnin runs a burn-in's jobs on a simulated site (sat burnin run
// --scheduler sim): the simulated GPU tools in process, the nodes'
// state read from the simulator its binding names. No scheduler is
// between them, so there is no reservation: the ledger's holds keep the
// nodes, and a simulated site has no users to keep off them.
type simBurnin struct {
	burnin.Tools
	client *sim.Client
	sm     *binding.Simulator
}

// settle is how long the nodes run their load before telemetry is read:
// the simulated GPUs' temperatures lag the load by about 20 s.
const settle = 2 * time.Minute

// advanceStep is the site time one advance request asks for.
const advanceStep = 5 * time.Second

func newSimBurnin(site string) (*simBurnin, error) {
	b, diags, err := loadBinding(site)
	if err != nil {
		return nil, err
	}
	if n := diags.Count(diag.Error); n > 0 {
		first := diags.Sorted()[0]
		return nil, fmt.Errorf("binding %s has %d error(s); the first, at %s: %s (run sat probe --site %s)", site, n, first.Pos, first.Message, site)
	}
	if b.Simulator == nil {
		return nil, fmt.Errorf("--scheduler sim: the binding in %s is not a simulated site's (sat sim writes one): burn in a real site through --scheduler slurm or kubernetes", site)
	}
	s := &simBurnin{client: &sim.Client{URL: strings.TrimRight(b.Simulator.Control, "/")}, sm: b.Simulator}
	s.Nodes = func(names ...string) ([]*gputools.Node, error) {
		return s.client.GPUViews(context.Background(), names...)
	}
	return s, nil
}

func (s *simBurnin) Describe() string {
	return "the simulated site's GPU tools at " + s.client.URL + ", in process (no scheduler)"
}

func (s *simBurnin) Reserve(context.Context, string, string, []string) error { return nil }
func (s *simBurnin) Release(context.Context) error                           { return nil }

// Load puts the nodes in burn-in (or back to idle) and lets the site's
// time run on until their temperatures settle: advanced at once on a
// stepped simulator, else waited out at its time scale.
func (s *simBurnin) Load(ctx context.Context, nodes []string, on bool) error {
	st := fleet.Idle
	if on {
		st = fleet.BurnIn
	}
	if _, err := s.client.SetNodes(ctx, sim.NodeRequest{Nodes: nodes, State: st}); err != nil {
		return fmt.Errorf("the simulator at %s: %w", s.client.URL, err)
	}
	if !on {
		return nil
	}
	if s.sm.Stepped {
		// a few seconds of site time a request: each is answered well
		// inside the control client's timeout on a busy machine
		for left := settle; left > 0; left -= advanceStep {
			if _, err := s.client.Advance(ctx, min(left, advanceStep)); err != nil {
				return fmt.Errorf("the simulator at %s: %w", s.client.URL, err)
			}
		}
		return nil
	}
	return clock.Real{}.Sleep(ctx, time.Duration(float64(settle)/s.sm.TimeScale))
}
