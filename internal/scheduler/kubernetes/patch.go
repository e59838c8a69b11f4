package kubernetes

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// PatchNodes exports the drainer's node patch for other writers of
// nodes (the burn-in's taint): build returns a merge patch for a node
// as read (with a "metadata" map: the node's resourceVersion is added
// to it as the precondition; a refused write is read again and
// retried) and whether it changes anything. Nodes are patched in
// parallel; the error names those that failed. The leader's epoch
// check applies as in Drain: a writer that is not a facilityd replica
// gives a Fence whose epoch no node carries.
func (d *Drainer) PatchNodes(ctx context.Context, op string, names []string, build func(n *corev1.Node) (patch map[string]any, change bool)) error {
	return d.each(ctx, op, names, func(n *corev1.Node, _ string, _ int64) (map[string]any, bool) { return build(n) })
}
