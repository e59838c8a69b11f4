// Package kubetest starts a real Kubernetes control plane for tests:
// etcd v3.7.3 and kube-apiserver v1.37.2, built from source by
// hack/envtest-bin/build.sh and driven by controller-runtime's envtest.
// There is no kube-controller-manager, scheduler or kubelet: tests
// assert what the API server stores, not what a kubelet would do.
//
// The binaries are found in $KUBEBUILDER_ASSETS, or else in
// $HOME/.cache/envtest-bin/v1.37.2 where the build script caches them.
// Nothing is ever downloaded, and a missing binary is a test failure
// that says how to build it, never a skip.
package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Version is the Kubernetes release the binaries are built from.
const Version = "v1.37.2"

// StartTimeout bounds each control-plane process's start: envtest's 20 s
// default is short for a loaded two-core machine.
const StartTimeout = 2 * time.Minute

// AssetsDir is where the binaries are looked for: $KUBEBUILDER_ASSETS,
// or the build script's cache.
func AssetsDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "envtest-bin", Version)
}

// Missing names the binaries that are not in dir, with how to build
// them, or returns "".
func Missing(dir string) string {
	var missing []string
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("the Kubernetes tests need etcd and kube-apiserver %s in %s (missing: %v): build them once with bash hack/envtest-bin/build.sh (4-10 min; .ci/peers runs it), or point KUBEBUILDER_ASSETS at a directory holding both",
		Version, dir, missing)
}

var quietOnce sync.Once

// Env is a running control plane.
type Env struct {
	// Config is an admin's (system:masters) client configuration.
	Config *rest.Config
	// Client is an admin's clientset.
	Client k8s.Interface
	// Kubeconfig is the admin's kubeconfig file.
	Kubeconfig string

	env *envtest.Environment
}

// Start starts etcd and kube-apiserver and stops them when the test
// ends. It fails the test (never skips) when the binaries are missing.
func Start(tb testing.TB) *Env {
	tb.Helper()
	dir := AssetsDir()
	if why := Missing(dir); why != "" {
		tb.Fatal(why)
	}
	quietOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	te := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		DownloadBinaryAssets:     false,
		ControlPlaneStartTimeout: StartTimeout,
		ControlPlaneStopTimeout:  time.Minute,
	}
	// Loopback only: without these two, kube-apiserver 1.37 picks the
	// default route's address (none in a loopback-only namespace), and
	// refuses 127.0.0.1 for its lease endpoint reconciler.
	te.ControlPlane.GetAPIServer().Configure().
		Set("advertise-address", "127.0.0.1").
		Set("endpoint-reconciler-type", "none")
	cfg, err := te.Start()
	if err != nil {
		_ = te.Stop()
		tb.Fatalf("starting etcd and kube-apiserver from %s: %v (KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true shows their logs)", dir, err)
	}
	tb.Cleanup(func() {
		if err := te.Stop(); err != nil {
			tb.Logf("stopping the control plane: %v", err)
		}
	})
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		tb.Fatalf("clientset: %v", err)
	}
	kc := filepath.Join(tb.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, te.KubeConfig, 0o600); err != nil {
		tb.Fatalf("kubeconfig: %v", err)
	}
	return &Env{Config: cfg, Client: cs, Kubeconfig: kc, env: te}
}

// User is a client configuration for a user of the API server, in
// groups, with no rights beyond what RBAC grants it.
func (e *Env) User(tb testing.TB, name string, groups ...string) *rest.Config {
	tb.Helper()
	u, err := e.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		tb.Fatalf("adding user %s: %v", name, err)
	}
	return u.Config()
}

// CreateNodes creates Node objects (no kubelet stands behind them).
func (e *Env) CreateNodes(tb testing.TB, names ...string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, n := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}}
		if _, err := e.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			tb.Fatalf("creating node %s: %v", n, err)
		}
	}
}

// Apply creates the objects of a manifest (documents split by ---):
// namespaces and RBAC, what seam's deploy/kubernetes files hold. RBAC
// reaches the authorizer through its cache: a test waits for a right
// before counting on it.
func (e *Env) Apply(tb testing.TB, path string) {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	for i, doc := range bytes.Split(raw, []byte("\n---\n")) {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			tb.Fatalf("%s: document %d: %v", path, i+1, err)
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = e.Client.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = e.Client.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = e.Client.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = e.Client.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = e.Client.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			tb.Fatalf("%s: document %d: a %T, which Apply does not create", path, i+1, obj)
		}
		if err != nil {
			tb.Fatalf("%s: document %d: %v", path, i+1, err)
		}
	}
}
