package kubernetes

import (
	"fmt"
	"path/filepath"
	"time"

	k8s "k8s.io/client-go/kubernetes"

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

// Client is the clientset a command's --kubeconfig flag names: the file
// it gives, else $KUBECONFIG, else the pod's service account; allowed
// qps requests a second, burst more (client-go's own 5 a second would
// take minutes over a site's nodes).
func Client(kubeconfig string, lookupEnv func(string) (string, bool), qps float32, burst int) (k8s.Interface, error) {
	path := kubeconfig
	if path == "" {
		path, _ = lookupEnv("KUBECONFIG")
	}
	if path != "" {
		path, _ = filepath.Abs(path)
	}
	cfg, err := RestConfig(path, "--kubeconfig")
	if err != nil {
		return nil, err
	}
	return NewClient(cfg, "", qps, burst)
}

// NewClient is the one place seam builds a clientset: from cfg, as
// userAgent ("" client-go's), at qps requests a second and burst more,
// every request bounded (a minute unless cfg says less).
func NewClient(cfg *rest.Config, userAgent string, qps float32, burst int) (k8s.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, burst
	if userAgent != "" {
		cfg.UserAgent = userAgent
	}
	if cfg.Timeout <= 0 || cfg.Timeout > time.Minute {
		cfg.Timeout = time.Minute
	}
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return cs, nil
}
