package satcmd

import (
	"context"
	"flag"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/burnin/kubeexec"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/dryrun"
	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
)

// burninKubeFlags are sat burnin run's flags for Kubernetes.
type burninKubeFlags struct {
	scheduler, kubeconfig, namespace, image, gpuResource string
	env                                                  []string
}

func (k *burninKubeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&k.scheduler, "scheduler", "slurm", "where the jobs run: slurm (a reservation, srun), kubernetes (a taint, pods pinned to the nodes) or sim (the simulated site of --site, its tools in process, no scheduler)")
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "with --scheduler kubernetes: the kubeconfig (default $KUBECONFIG, else the pod's service account)")
	fs.StringVar(&k.namespace, "namespace", "", "with --scheduler kubernetes: the namespace of the burn-in's pods")
	fs.StringVar(&k.image, "image", "", "with --scheduler kubernetes: the container image holding dcgmi, nvidia-smi and all_reduce_perf")
	fs.StringVar(&k.gpuResource, "gpu-resource", "nvidia.com/gpu", "with --scheduler kubernetes: the resource each pod asks for its node's GPUs by (\"\" none)")
	fs.Func("pod-env", "with --scheduler kubernetes: NAME=VALUE added to the pods' environment (repeat it)", func(v string) error {
		if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
			return fmt.Errorf("want NAME=VALUE, got %q", v)
		}
		k.env = append(k.env, v)
		return nil
	})
}

// check says what is missing or misplaced among the flags.
func (k *burninKubeFlags) check(f burninFlags) error {
	switch k.scheduler {
	case "slurm":
		if k.kubeconfig != "" || k.namespace != "" || k.image != "" || len(k.env) > 0 {
			return cli.Usagef("--kubeconfig, --namespace, --image and --pod-env are for --scheduler kubernetes")
		}
	case "kubernetes":
		switch {
		case k.namespace == "" || k.image == "":
			return cli.Usagef("--scheduler kubernetes needs --namespace NS and --image IMAGE (the GPU tools' image)")
		case f.slurmConf != "" || f.tools != "":
			return cli.Usagef("--slurm-conf and --tools are for --scheduler slurm (on Kubernetes the tools are in --image)")
		}
	case "sim":
		switch {
		case f.site == "":
			return cli.Usagef("--scheduler sim needs --site BINDING: the simulated site's binding (sat sim --out writes it)")
		case f.slurmConf != "" || f.tools != "" || k.kubeconfig != "" || k.namespace != "" || k.image != "" || len(k.env) > 0:
			return cli.Usagef("--scheduler sim runs the simulated tools in process: leave out --slurm-conf, --tools and the Kubernetes flags")
		}
	default:
		return cli.Usagef("--scheduler %q: slurm, kubernetes or sim", k.scheduler)
	}
	return nil
}

// burninReserver is a scheduler that holds the nodes for the burn-in
// and runs its jobs.
type burninReserver interface {
	burnin.Executor
	Reserve(ctx context.Context, name, user string, nodes []string) error
	Release(ctx context.Context) error
}

// executor is the Kubernetes executor and the ledger's drainer, or nil
// for Slurm.
func (k *burninKubeFlags) executor(lookupEnv func(string) (string, bool), gpus int) (burninReserver, *kube.Drainer, error) {
	if k.scheduler != "kubernetes" {
		return nil, nil, nil
	}
	// a module's 288 nodes tainted within one burst
	cs, err := kube.Client(k.kubeconfig, lookupEnv, 100, 600)
	if err != nil {
		return nil, nil, err
	}
	kx := &kubeexec.Kube{Client: cs, Namespace: k.namespace, Image: k.image}
	for _, e := range k.env {
		name, value, _ := strings.Cut(e, "=")
		kx.Env = append(kx.Env, corev1.EnvVar{Name: name, Value: value})
	}
	if k.gpuResource != "" {
		kx.Limits = corev1.ResourceList{corev1.ResourceName(k.gpuResource): *resource.NewQuantity(int64(gpus), resource.DecimalSI)}
	}
	return kx, &kube.Drainer{Client: cs, Component: "sat-burnin"}, nil
}

// peer is the kind of peer a dry run's scheduler writes go to.
func (k *burninKubeFlags) peer() string {
	if k.scheduler == "kubernetes" {
		return dryrun.Kubernetes
	}
	return dryrun.Scheduler
}

// undo says how to end a reservation by hand when its release failed.
func (k *burninKubeFlags) undo(reservation string) string {
	if k.scheduler == "kubernetes" {
		return "kubectl taint nodes NODE… " + kubeexec.TaintKey + "=" + reservation + ":NoSchedule-"
	}
	return "scontrol delete ReservationName=" + reservation
}

// name is the scheduler's, for messages.
func (k *burninKubeFlags) name() string {
	switch k.scheduler {
	case "kubernetes":
		return "Kubernetes"
	case "sim":
		return "no scheduler"
	}
	return "Slurm"
}
