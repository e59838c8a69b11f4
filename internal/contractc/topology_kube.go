package contractc

import (
	"flag"
	"os"

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
	// labelling a 10,000-node site is 10,000 applies
	cs, err := kube.Client(*k.kubeconfig, os.LookupEnv, 100, 200)
	if err != nil {
		return nil, err
	}
	return &kube.Nodes{Client: cs}, nil
}
