package kubernetes_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seamdc/seam/internal/peer/kubetest"
	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
)

// Nodes.ApplyLabels writes only nodes its Read saw, each held to the
// uid it had then: against a real kube-apiserver, a node unknown to the
// Read is refused before any request (server-side apply would create
// it), and a node deleted and made again since is refused by the API
// server; the others are labelled, and a label the manager set before
// and no longer gives is removed.
func TestApplyLabelsOnlyToTheNodesRead(t *testing.T) {
	t.Parallel()
	e := kubetest.Start(t)
	ctx := context.Background()
	e.CreateNodes(t, "n1", "n2")
	n := &kube.Nodes{Client: e.Client}
	st, err := n.Read(ctx)
	require.NoError(t, err)
	require.Len(t, st.Nodes, 2)
	require.NoError(t, n.ApplyLabels(ctx, "seam-topology", map[string]map[string]string{"n1": {"a": "1", "b": "2"}}))
	require.NoError(t, n.ApplyLabels(ctx, "seam-topology", map[string]map[string]string{"n1": {"a": "1"}}))
	got, err := e.Client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", got.Labels["a"])
	assert.NotContains(t, got.Labels, "b", "the label the manager no longer gives is removed")
	assert.Equal(t, "n1", got.Labels["kubernetes.io/hostname"], "another manager's label stays")

	require.NoError(t, e.Client.CoreV1().Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}))
	e.CreateNodes(t, "n2")
	err = n.ApplyLabels(ctx, "seam-topology", map[string]map[string]string{"n2": {"a": "1"}, "n3": {"a": "1"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "labelling 2 of 2 node(s) failed (n[2-3])")
	assert.Contains(t, err.Error(), "node n2: it is not the node read (deleted, or deleted and made again, since): apply again")
	err = n.ApplyLabels(ctx, "seam-topology", map[string]map[string]string{"n3": {"a": "1"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node n3: not among the nodes read")
	// a node deleted since the Read: the uid precondition keeps the
	// apply from creating it
	require.NoError(t, e.Client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}))
	err = n.ApplyLabels(ctx, "seam-topology", map[string]map[string]string{"n1": {"a": "1"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node n1: it is not the node read")
	_, err = e.Client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the deleted node is not made again: %v", err)
	got, err = e.Client.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, got.Labels, "a", "the node made again since the Read is not labelled")
	_, err = e.Client.CoreV1().Nodes().Get(ctx, "n3", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no Node is created: %v", err)
}
