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
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology"
)

func runTopologyApply(args []string, stdout, stderr io.Writer) int {
	const name = "topology apply"
	fs := flag.NewFlagSet("DIR|--records FILE (--slurm-conf PATH | --slurm) [--dry-run] [--kubectl FILE | --kubernetes]", flag.ContinueOnError)
	slurmConf := fs.String("slurm-conf", "", "slurm.conf of the cluster (SLURM_CONF); topology.conf is beside it")
	slurm := fs.Bool("slurm", false, "apply to the Slurm that scontrol reaches (SLURM_CONF from the environment)")
	format := fs.String("format", topology.FormatSlurmTree, "what to write as topology.conf: slurm-tree or slurm-block")
	dryRun := fs.Bool("dry-run", false, "show the difference against the live scheduler; change nothing")
	force := fs.Bool("force", false, "replace a topology.conf seam did not write, or one edited by hand")
	restart := fs.String("restart-cmd", "", "a command that starts slurmctld again, run when it stopped after a failed reconfigure (e.g. \"systemctl restart slurmctld\")")
	kubectl := fs.String("kubectl", "", "Kubernetes: a saved kubectl get nodes -o json to show the label changes against (dry run)")
	kube := fs.Bool("kubernetes", false, "Kubernetes: show the label changes against the live cluster (kubectl; dry run)")
	verbose := fs.Bool("v", false, "log each step")
	tf := addTopoFlags(fs)
	pos, err := cli.Parse(fs, args)
	var src string
	if err == nil {
		src, err = tf.source(pos)
	}
	toSlurm := *slurm || *slurmConf != ""
	toKube := *kube || *kubectl != ""
	switch {
	case err != nil:
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
		o := tf.renderOptions(*format)
		o.Command = "contractc topology " + src + " --format " + *format
		out, err := topology.Render(t, o)
		if err != nil {
			return fail(stderr, name, fs, err)
		}
		warn(stderr, name, out.Warnings)
		s := &scheduler.Slurm{Conf: *slurmConf, Command: scheduler.Command{Log: logger(stderr, *verbose)}}
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
		var k scheduler.Scheduler = scheduler.Kubectl{}
		if *kubectl != "" {
			k = scheduler.KubeFile{Path: *kubectl}
		}
		st, err := k.Read(ctx)
		if err != nil {
			return fail(stderr, name, fs, err)
		}
		plan := topology.PlanLabels(t, st, *tf.prefix, *tf.zone)
		touched := map[string]bool{}
		for _, c := range plan.Changes {
			touched[c.Node] = true
		}
		fmt.Fprintf(stdout, "kubernetes: %d label change(s) on %d of %d node(s) (field manager %s)\n", len(plan.Changes), len(touched), len(st.Nodes), topology.FieldManager)
		fmt.Fprint(stdout, plan.Format())
		if !*dryRun {
			fmt.Fprintf(stdout, "kubernetes: seam does not write labels yet: apply them with\n  contractc topology %s --format k8s -o nodes.yaml && kubectl apply --server-side --field-manager=%s --force-conflicts -f nodes.yaml\n", src, topology.FieldManager)
		}
	}
	return code
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
