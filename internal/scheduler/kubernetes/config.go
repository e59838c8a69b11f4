package kubernetes

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RestConfig is a client configuration: from the kubeconfig file at
// path, or, when path is "", the pod's service account. setting names
// where a path is given (--kubeconfig, scheduler.kubernetes.kubeconfig),
// for the error.
func RestConfig(path, setting string) (*rest.Config, error) {
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", setting, path, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: no %s given and not in a pod (%w): give %s", setting, err, setting)
	}
	return cfg, nil
}
