package contractc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology"
)

func runTopologyApply(args []string, stdout, stderr io.Writer) int {
	const name = "topology apply"
	fs := flag.NewFlagSet("DIR|--records FILE (--slurm-conf PATH | --slurm | --kubernetes [--kubeconfig F] | --kubectl FILE --dry-run) [--dry-run]", flag.ContinueOnError)
	slurmConf := fs.String("slurm-conf", "", "slurm.conf of the cluster (SLURM_CONF); topology.conf is beside it")
	slurm := fs.Bool("slurm", false, "apply to the Slurm that scontrol reaches (SLURM_CONF from the environment)")
	format := fs.String("format", topology.FormatSlurmTree, "what to write as topology.conf: slurm-tree or slurm-block")
	dryRun := fs.Bool("dry-run", false, "show the difference against the live scheduler; change nothing")
	force := fs.Bool("force", false, "replace a topology.conf seam did not write, or one edited by hand")
	restart := fs.String("restart-cmd", "", "a command that starts slurmctld again, run when it stopped after a failed reconfigure (e.g. \"systemctl restart slurmctld\")")
	kubectl := fs.String("kubectl", "", "Kubernetes: a saved kubectl get nodes -o json to show the label changes against (with --dry-run)")
	kf := addKubeFlags(fs, "Kubernetes: apply seam's node labels to the live cluster (its API: --kubeconfig), server-side as "+topology.FieldManager)
	verbose := fs.Bool("v", false, "log each step")
	tf := addTopoFlags(fs)
	pos, err := cli.Parse(fs, args)
	var src string
	if err == nil {
		src, err = tf.source(pos)
	}
	toSlurm := *slurm || *slurmConf != ""
	toKube := *kf.live || *kubectl != ""
	switch {
	case err != nil:
	case *kf.live && *kubectl != "":
		err = cli.Usagef("--kubernetes applies to the live cluster: give it or --kubectl, not both")
	case *kubectl != "" && !*dryRun:
		err = cli.Usagef("--kubectl %s is a saved copy: it shows the changes (--dry-run); apply them to the cluster with --kubernetes", *kubectl)
	case *kf.kubeconfig != "" && !*kf.live:
		err = cli.Usagef("--kubeconfig is for --kubernetes")
	case !toSlurm && !toKube:
		err = cli.Usagef("apply to what? give --slurm-conf PATH (or --slurm), or --kubectl FILE / --kubernetes")
	case *format != topology.FormatSlurmTree && *format != topology.FormatSlurmBlock:
		err = cli.Usagef("--format %q: topology.conf is slurm-tree or slurm-block", *format)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printFlags(stderr, name, fs)
			fmt.Fprintln(stderr, topologyExits)
			return cli.ExitOK
		}
		return fail(stderr, name, fs, err)
	}
	t, err := tf.build(pos, stderr)
	if err != nil {
		return fail(stderr, name, fs, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	code := cli.ExitOK
	if toSlurm {
		s := &scheduler.Slurm{Conf: *slurmConf, Command: scheduler.Command{Log: logger(stderr, *verbose)}}
		if *dryRun { // the apply stops before it writes; the client records anything that would
			s.Dry = dryrun.New(stdout, nil)
		}
		if err := s.Reachable(ctx); err != nil { // a dry run reads Slurm too
			return fail(stderr, name, fs, err)
		}
		o := tf.renderOptions(*format)
		o.Command = "contractc topology " + src + " --format " + *format
		out, err := topology.Render(t, o)
		if err != nil {
			return fail(stderr, name, fs, err)
		}
		warn(stderr, name, out.Warnings)
		opts := topology.ApplyOptions{DryRun: *dryRun, Force: *force, FromFabric: *tf.fabric != "", Source: src, Log: logger(stderr, *verbose)}
		if *restart != "" {
			opts.Restart = func(ctx context.Context) error {
				out, err := exec.CommandContext(ctx, "sh", "-c", *restart).CombinedOutput()
				if err != nil {
					return fmt.Errorf("%s: %w: %s", *restart, err, strings.TrimSpace(string(out)))
				}
				return nil
			}
		}
		res := topology.ApplySlurm(ctx, s, out.Text, opts)
		if !writeApply(stdout, stderr, res) {
			code = cli.ExitTool
		}
	}
	if toKube {
		var k topology.Labeler = savedNodes{scheduler.KubeFile{Path: *kubectl}}
		if *kf.live {
			if k, err = kf.nodes(); err != nil {
				return fail(stderr, name, fs, err)
			}
		}
		if !writeKubeApply(stdout, stderr, topology.ApplyLabels(ctx, t, k, *tf.prefix, *tf.zone, *dryRun)) {
			code = cli.ExitTool
		}
	}
	return code
}

// savedNodes is a saved kubectl get nodes -o json: read, never written
// (the flags allow it only with --dry-run).
type savedNodes struct{ scheduler.KubeFile }

func (savedNodes) ApplyLabels(context.Context, string, map[string]map[string]string) error {
	return errors.New("a saved kubectl get nodes is not a cluster: apply with --kubernetes")
}

// writeKubeApply reports an apply of the node labels and says whether it
// succeeded.
func writeKubeApply(stdout, stderr io.Writer, r *topology.KubeApplyResult) bool {
	if r.Plan != nil {
		touched := map[string]bool{}
		for _, c := range r.Plan.Changes {
			touched[c.Node] = true
		}
		fmt.Fprintf(stdout, "kubernetes: %d label change(s) on %d of %d node(s) (field manager %s)\n", len(r.Plan.Changes), len(touched), r.Nodes, topology.FieldManager)
		fmt.Fprint(stdout, r.Plan.Format())
	}
	fmt.Fprintf(stdout, "kubernetes: %s\n", r.Result)
	if len(r.Left) > 0 {
		fmt.Fprintf(stdout, "kubernetes: %d label(s) under the prefix were set by another manager and stay: remove them by hand (kubectl label node NODE KEY-)\n", len(r.Left))
	}
	if r.Err != nil {
		fmt.Fprintf(stderr, "contractc topology apply: kubernetes: %s: %v\n", r.Result, r.Err)
		return false
	}
	return true
}

// writeApply reports an apply and says whether it succeeded.
func writeApply(stdout, stderr io.Writer, r *topology.ApplyResult) bool {
	what := "not written by seam"
	switch {
	case r.Stamp.Generated && r.Stamp.Intact:
		what = "written by seam"
	case r.Stamp.Generated:
		what = "written by seam, then edited"
	}
	if r.File != "" {
		fmt.Fprintf(stdout, "slurm: %s (%s)\n", r.File, what)
	}
	if !r.Diff.Empty() {
		fmt.Fprintf(stdout, "slurm: %d edge(s) to add, %d to remove:\n%s", len(r.Diff.Added), len(r.Diff.Removed),
			topology.FormatDiff(r.Diff, "new", "running now, dropped"))
	} else if r.Result != topology.ResultRefused || r.File != "" {
		fmt.Fprintln(stdout, "slurm: the running topology already has these edges")
	}
	fmt.Fprintf(stdout, "slurm: %s", r.Result)
	if r.Backup != "" {
		fmt.Fprintf(stdout, " (backup %s)", r.Backup)
	}
	if r.Result != topology.ResultDryRun && r.Audit != "" {
		fmt.Fprintf(stdout, "; audit %s", r.Audit)
	}
	fmt.Fprintln(stdout)
	if r.Err != nil {
		fmt.Fprintf(stderr, "contractc topology apply: %s: %v\n", r.Result, r.Err)
	}
	ok := r.Result == topology.ResultApplied || r.Result == topology.ResultUnchanged || r.Result == topology.ResultDryRun
	return ok && r.Err == nil
}
