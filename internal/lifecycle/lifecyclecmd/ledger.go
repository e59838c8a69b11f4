package lifecyclecmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/scheduler"
	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
)

// schedFlags say which scheduler a change of holds is applied to in
// the same call: the store is the site's ledger of holds, and a node is
// drained exactly while some owner holds it.
type schedFlags struct {
	kind, slurmConf, kubeconfig string
}

// withScheduler adds the scheduler's flags.
func (c *common) withScheduler() *common {
	c.fs.StringVar(&c.sched.kind, "scheduler", os.Getenv("SEAM_SCHEDULER"),
		"apply the nodes' holds to this scheduler in the same call: slurm, kubernetes, or none (facilityd's reconcile applies them) ($SEAM_SCHEDULER)")
	c.fs.StringVar(&c.sched.slurmConf, "slurm-conf", "", "with --scheduler slurm: slurm.conf (default $SLURM_CONF, or Slurm's own)")
	c.fs.StringVar(&c.sched.kubeconfig, "kubeconfig", "", "with --scheduler kubernetes: the kubeconfig (default $KUBECONFIG)")
	return c
}

// drainer is the scheduler of --scheduler (nil: none), and whose names
// the nodes go by.
func (c *common) drainer() (scheduler.Drainer, string, string, error) {
	switch c.sched.kind {
	case "", "none":
		return nil, "slurm", dryrun.Scheduler, nil
	case "slurm":
		return &scheduler.Slurm{Conf: c.sched.slurmConf, Command: scheduler.Command{Timeout: 30 * time.Second}}, "slurm", dryrun.Scheduler, nil
	case "kubernetes":
		cs, err := kube.Client(c.sched.kubeconfig, c.lookupEnv, 100, 600)
		if err != nil {
			return nil, "", "", err
		}
		return &kube.Drainer{Client: cs, Component: "sat-lifecycle"}, "kubernetes", dryrun.Kubernetes, nil
	}
	return nil, "", "", cli.Usagef("--scheduler %q: slurm, kubernetes or none", c.sched.kind)
}

// ledger is the store as the ledger of holds, changes made as a,
// applied to --scheduler; a dry run's reads the store and the
// scheduler and records every write.
func (c *common) ledger(ctx context.Context, s *lifecycle.Store, a lifecycle.Auth) (*ledger.Ledger, error) {
	sched, system, peer, err := c.drainer()
	if err != nil {
		return nil, err
	}
	var backend hold.Backend = s.Ledger(a, system)
	if c.rec.Active() {
		if backend, err = hold.Copy(ctx, backend, c.rec); err != nil {
			return nil, err
		}
		if sched != nil {
			sched = scheduler.DryRun(sched, c.rec, peer)
		}
	}
	return &ledger.Ledger{Backend: backend, Sched: sched, DryRun: c.rec.Active()}, nil
}

// applyHolds brings the scheduler state of the nodes (keys) whose holds
// a move changed in line with them.
func (c *common) applyHolds(ctx context.Context, s *lifecycle.Store, a lifecycle.Auth, keys []string, out io.Writer) error {
	if len(keys) == 0 {
		return nil
	}
	l, err := c.ledger(ctx, s, a)
	if err != nil {
		return err
	}
	if l.Sched == nil {
		fmt.Fprintf(out, "holds changed on %d node(s): facilityd's reconcile applies them to the scheduler (or give --scheduler)\n", len(keys))
		return nil
	}
	names, err := s.NodeNames(ctx, keys, c.system())
	if err != nil {
		return err
	}
	res, err := l.Apply(ctx, names)
	printApplied(out, res, l.DryRun)
	return err
}

func (c *common) system() string {
	if c.sched.kind == "kubernetes" {
		return "kubernetes"
	}
	return "slurm"
}

func printApplied(w io.Writer, r ledger.Result, dry bool) {
	drained, returned := "drained", "returned to the pool"
	if dry {
		drained, returned = "would drain", "would return to the pool"
	}
	if len(r.Drained) > 0 {
		fmt.Fprintf(w, "%s: %d node(s)\n", drained, len(r.Drained))
	}
	if len(r.Reasons) > 0 {
		fmt.Fprintf(w, "%s, the reason now naming every owner: %d node(s)\n", map[bool]string{false: "drained already", true: "drained already (would be)"}[dry], len(r.Reasons))
	}
	if len(r.Returned) > 0 {
		fmt.Fprintf(w, "%s: %d node(s)\n", returned, len(r.Returned))
	}
	if len(r.Left) > 0 {
		fmt.Fprintf(w, "left as an operator set them: %d node(s)\n", len(r.Left))
	}
}
