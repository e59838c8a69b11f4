package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Nodes reads the cluster's nodes and sets their labels by server-side
// apply: the reader and writer of contractc topology drift and apply.
type Nodes struct {
	Client k8s.Interface
	// Workers apply to nodes in parallel (default 16).
	Workers int

	mu   sync.Mutex
	uids map[string]types.UID // from the last Read: an apply's precondition
}

var _ scheduler.Scheduler = (*Nodes)(nil)

// Read lists the nodes, with their labels and managed fields, as
// kubectl get nodes -o json --show-managed-fields gives them (one
// parser reads both: scheduler.ParseKubeNodes).
func (n *Nodes) Read(ctx context.Context) (*scheduler.State, error) {
	list := &corev1.NodeList{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		page, err := n.Client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("kubernetes: listing nodes: %w", err)
		}
		list.Items = append(list.Items, page.Items...)
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	uids := make(map[string]types.UID, len(list.Items))
	for _, it := range list.Items {
		uids[it.Name] = it.UID
	}
	n.mu.Lock()
	n.uids = uids
	n.mu.Unlock()
	list.Kind, list.APIVersion = "NodeList", "v1"
	raw, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: nodes: %w", err)
	}
	return scheduler.ParseKubeNodes("the Kubernetes API (nodes)", raw)
}

// ApplyLabels sets each node's labels by server-side apply as manager,
// forcing conflicts: labels maps a node to every label manager sets on
// it, so that a label it set before and no longer gives is removed
// (labels other managers set are left alone). Only nodes the last Read
// saw are written, each with its uid as precondition: an apply never
// creates a Node, nor labels one that was deleted and made again since.
// The error names the nodes that failed.
func (n *Nodes) ApplyLabels(ctx context.Context, manager string, labels map[string]map[string]string) error {
	n.mu.Lock()
	uids := n.uids
	n.mu.Unlock()
	workers := n.Workers
	if workers <= 0 {
		workers = 16
	}
	names := sortedNames(labels)
	bad, first := parallel(names, workers, func(name string) error {
		if err := n.apply(ctx, manager, name, uids[name], labels[name]); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		return nil
	})
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("kubernetes: labelling %d of %d node(s) failed (%s): %w", len(bad), len(names), hostlist.Compress(bad), first)
}

func (n *Nodes) apply(ctx context.Context, manager, name string, uid types.UID, labels map[string]string) error {
	if uid == "" {
		return fmt.Errorf("not among the nodes read: seam labels only nodes Kubernetes has (read them first)")
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": name, "uid": uid, "labels": labels},
	})
	if err != nil {
		return err
	}
	force := true
	_, err = n.Client.CoreV1().Nodes().Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: manager, Force: &force})
	if apierrors.IsConflict(err) || apierrors.IsInvalid(err) && strings.Contains(err.Error(), "metadata.uid") {
		return fmt.Errorf("it is not the node read (deleted, or deleted and made again, since): apply again: %w", err)
	}
	return err
}

func sortedNames(m map[string]map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
