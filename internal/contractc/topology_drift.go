package contractc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology"
)

func runTopologyDrift(args []string, stdout, stderr io.Writer) int {
	const name = "topology drift"
	fs := flag.NewFlagSet("DIR|--records FILE [--scontrol FILE] [--sinfo FILE] [--kubectl FILE] [--slurm] [--kubernetes [--kubeconfig F]] [--format text|json|markdown]", flag.ContinueOnError)
	scontrol := fs.String("scontrol", "", "a saved scontrol show topology")
	sinfo := fs.String("sinfo", "", "a saved sinfo --json")
	kubectl := fs.String("kubectl", "", "a saved kubectl get nodes -o json (--show-managed-fields tells hand-typed labels)")
	slurm := fs.Bool("slurm", false, "read the live Slurm (scontrol show topology, sinfo --json)")
	slurmConf := fs.String("slurm-conf", "", "with --slurm: slurm.conf (SLURM_CONF)")
	kf := addKubeFlags(fs, "read the live Kubernetes (its API: --kubeconfig)")
	format := fs.String("format", "text", "report: "+strings.Join(topology.DriftFormats, ", "))
	output := fs.String("o", "", "write the report to FILE (default: standard output)")
	verbose := fs.Bool("v", false, "log the commands run")
	tf := addTopoFlags(fs)
	pos, err := cli.Parse(fs, args)
	var src string
	if err == nil {
		src, err = tf.source(pos)
	}
	switch {
	case err != nil:
	case !slices.Contains(topology.DriftFormats, *format):
		err = cli.Usagef("--format %q: want one of %s", *format, strings.Join(topology.DriftFormats, ", "))
	case *scontrol == "" && *sinfo == "" && *kubectl == "" && !*slurm && !*kf.live:
		err = cli.Usagef("drift against what? give saved output (--scontrol, --sinfo, --kubectl) or --slurm / --kubernetes")
	case *slurm && (*scontrol != "" || *sinfo != ""):
		err = cli.Usagef("--slurm reads the live Slurm: give it or --scontrol/--sinfo, not both")
	case *kf.live && *kubectl != "":
		err = cli.Usagef("--kubernetes reads the live cluster: give it or --kubectl, not both")
	case *kf.kubeconfig != "" && !*kf.live:
		err = cli.Usagef("--kubeconfig is for --kubernetes")
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
	var slurmIn, kubeIn scheduler.Scheduler
	switch {
	case *slurm:
		s := &scheduler.Slurm{Conf: *slurmConf, Command: scheduler.Command{Log: logger(stderr, *verbose)}}
		if err := s.Reachable(ctx); err != nil {
			return fail(stderr, name, fs, fmt.Errorf("%w, or pass saved copies of its output with --scontrol and --sinfo", err))
		}
		slurmIn = s
	case *scontrol != "" || *sinfo != "":
		slurmIn = scheduler.SlurmFiles{Topology: *scontrol, Sinfo: *sinfo}
	}
	switch {
	case *kf.live:
		n, err := kf.nodes()
		if err != nil {
			return fail(stderr, name, fs, err)
		}
		kubeIn = n
	case *kubectl != "":
		kubeIn = scheduler.KubeFile{Path: *kubectl}
	}
	states, err := scheduler.ReadAll(ctx, slurmIn, kubeIn)
	if err != nil {
		return fail(stderr, name, fs, err)
	}
	slurmSt, kubeSt := states[0], states[1]
	r := topology.Drift(t, slurmSt, kubeSt, topology.DriftOptions{Inventory: src, LabelPrefix: *tf.prefix, ZoneLabel: *tf.zone})
	w := stdout
	if *output != "" {
		f, err := os.Create(*output)
		if err != nil {
			return fail(stderr, name, fs, err)
		}
		defer f.Close()
		w = f
	}
	if err := topology.WriteReport(w, r, *format); err != nil {
		return fail(stderr, name, fs, err)
	}
	if r.Drifted() {
		return cli.ExitFindings
	}
	return cli.ExitOK
}
