package satcmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// burninFacility is the module-wide step of sat burnin run --site
// BINDING --plan PLAN: the feeds', PDUs' and CDUs' channels read through
// the binding, the training load started and stopped on the burn-in's
// nodes, and site time moved on between samples. Only a simulated site
// can do the last two yet: its control interface sets the nodes'
// workload, and a stepped simulator (sat sim --stepped) moves its time
// only when the step advances it, so the grade does not depend on how
// busy the machine is. The returned close closes the devices.
func burninFacility(f burninFlags, names []string, moduleNodes int, stderr io.Writer, lookupEnv func(string) (string, bool)) (*burnin.Facility, func(), error) {
	p, err := plan.Read(f.plan)
	if err != nil {
		return nil, nil, fmt.Errorf("--plan: %w", err)
	}
	b, diags, err := loadBinding(f.site)
	if err != nil {
		return nil, nil, err
	}
	if n := diags.Count(diag.Error); n > 0 {
		first := diags.Sorted()[0]
		return nil, nil, fmt.Errorf("binding %s has %d error(s); the first, at %s: %s (run sat probe --site %s)", f.site, n, first.Pos, first.Message, f.site)
	}
	sm := b.Simulator
	if sm == nil {
		return nil, nil, fmt.Errorf("--site %s: the module-wide step needs to start the module's training load and know its edges, which seam does only on a simulated site yet (docs/burnin.md); leave --site out to burn in without it", f.site)
	}
	ps, err := probe.OpenSite(b, probe.Options{LookupEnv: lookupEnv})
	if err != nil {
		return nil, nil, err
	}
	if len(names) < moduleNodes {
		fmt.Fprintf(stderr, "sat burnin: the module-wide step trains %d of module %s's %d nodes: its transient clauses see that share of the module's load\n", len(names), f.module, moduleNodes)
	}
	client := &sim.Client{URL: strings.TrimRight(sm.Control, "/")}
	now := func(ctx context.Context) (time.Time, error) {
		st, err := client.Status(ctx)
		return st.Time, err
	}
	fac := &burnin.Facility{Plan: p, Module: f.module, Read: burnin.ChannelReader(ps),
		Train: func(ctx context.Context, on bool) (time.Time, error) {
			st := fleet.Idle
			if on {
				st = fleet.Training
			}
			if _, err := client.SetNodes(ctx, sim.NodeRequest{Nodes: names, State: st}); err != nil {
				return time.Time{}, fmt.Errorf("the simulator at %s: %w", sm.Control, err)
			}
			return now(ctx)
		},
		Wait: func(ctx context.Context, d time.Duration) (time.Time, error) {
			if sm.Stepped {
				st, err := client.Advance(ctx, d)
				return st.Time, err
			}
			if err := (clock.Real{}).Sleep(ctx, time.Duration(float64(d)/sm.TimeScale)); err != nil {
				return time.Time{}, err
			}
			return now(ctx)
		},
	}
	return fac, func() { ps.Close() }, nil
}
