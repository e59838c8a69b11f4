package kubeexec

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/peer/kubetest"
)

// The RBAC of deploy/kubernetes/burnin is enough for a burn-in (taint,
// check, a job's pods and rank 0's log, release) by a member of the
// group seam-burnin, and a user outside it may not taint a node.
func rbacEnough(t *testing.T, env *kubetest.Env, node string) {
	env.Apply(t, "../../../deploy/kubernetes/burnin/rbac.yaml")
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
