package contractc

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	k8s "k8s.io/client-go/kubernetes"

	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
)

// kubeFlags name the live cluster of topology drift and apply.
type kubeFlags struct {
	live       *bool
	kubeconfig *string
}

func addKubeFlags(fs *flag.FlagSet, live string) kubeFlags {
	return kubeFlags{
		live:       fs.Bool("kubernetes", false, live),
		kubeconfig: fs.String("kubeconfig", "", "with --kubernetes: the kubeconfig (default $KUBECONFIG, else the pod's service account)"),
	}
}

// nodes is the live cluster's nodes, through the Kubernetes API.
func (k kubeFlags) nodes() (*kube.Nodes, error) {
	path := *k.kubeconfig
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path != "" {
		path, _ = filepath.Abs(path)
	}
	cfg, err := kube.RestConfig(path, "--kubeconfig")
	if err != nil {
		return nil, err
	}
	// labelling a 10,000-node site is 10,000 applies: client-go's own
	// 5 requests a second would take half an hour
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &kube.Nodes{Client: cs}, nil
}
