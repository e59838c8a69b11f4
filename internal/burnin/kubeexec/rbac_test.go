package kubeexec

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/peer/kubetest"
)

// applyRBAC creates the objects of deploy/kubernetes/burnin/rbac.yaml.
func applyRBAC(t *testing.T, cs k8s.Interface) {
	raw, err := os.ReadFile("../../../deploy/kubernetes/burnin/rbac.yaml")
	require.NoError(t, err)
	ctx := context.Background()
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		require.NoError(t, err, string(doc))
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = cs.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = cs.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = cs.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("rbac.yaml: unexpected %T", obj)
		}
		require.NoError(t, err)
	}
}

// The RBAC of deploy/kubernetes/burnin is enough for a burn-in (taint,
// check, a job's pods and rank 0's log, release) by a member of the
// group seam-burnin, and a user outside it may not taint a node.
func rbacEnough(t *testing.T, env *kubetest.Env, node string) {
	applyRBAC(t, client(t, env))
	ctx := context.Background()
	alice, err := k8s.NewForConfig(env.User(t, "alice", "seam-burnin"))
	require.NoError(t, err)
	ex := &Kube{Client: alice, Namespace: "seam-burnin", Image: "tools:1"}
	require.NoError(t, ex.Reserve(ctx, "bi-rbac", "alice", []string{node}))
	bad, err := ex.Unavailable(ctx, []string{node})
	require.NoError(t, err)
	assert.Empty(t, bad)
	o := ex.Run(ctx, burnin.Job{Step: "diag", Nodes: []string{node}, Command: []string{"dcgmi", "diag", "-r", "1", "-j"}})
	require.NoError(t, o.Err)
	assert.Equal(t, 0, o.Exit)
	assert.Contains(t, string(o.Stdout), "DCGM Diagnostic")
	require.NoError(t, ex.Release(ctx))

	bob, err := k8s.NewForConfig(env.User(t, "bob"))
	require.NoError(t, err)
	err = (&Kube{Client: bob, Namespace: "seam-burnin"}).Reserve(ctx, "bi-bob", "bob", []string{node})
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), err.Error())
}
