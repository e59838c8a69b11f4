package kubetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestMissingNamesTheBuildScript: a missing binary is reported with the
// command that builds it (Start turns it into a failure, not a skip).
func TestMissingNamesTheBuildScript(t *testing.T) {
	dir := t.TempDir()
	why := Missing(dir)
	for _, want := range []string{"hack/envtest-bin/build.sh", "etcd", "kube-apiserver", dir} {
		if !strings.Contains(why, want) {
			t.Errorf("Missing(%s) = %q, want it to name %q", dir, why, want)
		}
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if why := Missing(dir); why != "" {
		t.Errorf("both binaries present, Missing = %q", why)
	}
}

func TestAssetsDirFollowsKUBEBUILDER_ASSETS(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "/some/where")
	if got := AssetsDir(); got != "/some/where" {
		t.Errorf("AssetsDir() = %q", got)
	}
	t.Setenv("KUBEBUILDER_ASSETS", "")
	if got := AssetsDir(); !strings.HasSuffix(got, filepath.Join(".cache", "envtest-bin", Version)) {
		t.Errorf("AssetsDir() = %q, want the build script's cache", got)
	}
}

// TestStart runs the real control plane: the version is the one built,
// Nodes can be created and read back, and a user without RBAC rights is
// refused.
func TestStart(t *testing.T) {
	e := Start(t)
	ctx := context.Background()
	v, err := e.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != Version {
		t.Errorf("server version %s, want %s", v.GitVersion, Version)
	}
	e.CreateNodes(t, "gpu-1", "gpu-2")
	nodes, err := e.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Errorf("%d nodes, want 2", len(nodes.Items))
	}
	if _, err := os.Stat(e.Kubeconfig); err != nil {
		t.Errorf("kubeconfig: %v", err)
	}
	nobody := e.User(t, "nobody")
	if _, err := newClient(nobody).CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("a user with no RBAC rights listed nodes")
	}
}

func newClient(cfg *rest.Config) k8s.Interface { return k8s.NewForConfigOrDie(cfg) }

// recorder is a testing.TB that records Fatal and Skip.
type recorder struct {
	testing.TB
	fatal, skipped string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Fatal(args ...any)         { r.fatal = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, a ...any) { r.fatal = fmt.Sprintf(f, a...); runtime.Goexit() }
func (r *recorder) Skip(args ...any)          { r.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Skipf(f string, a ...any)  { r.skipped = fmt.Sprintf(f, a...); runtime.Goexit() }
func (r *recorder) SkipNow()                  { r.skipped = "SkipNow"; runtime.Goexit() }

// TestStartFailsWithoutBinaries: Start fails the test, naming the build
// script, and never skips it.
func TestStartFailsWithoutBinaries(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(r)
	}()
	<-done
	if r.skipped != "" {
		t.Errorf("Start skipped: %s", r.skipped)
	}
	if !strings.Contains(r.fatal, "hack/envtest-bin/build.sh") {
		t.Errorf("Start's failure %q does not name the build script", r.fatal)
	}
}
