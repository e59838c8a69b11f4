package kubeexec

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// wait watches the job's pods until n of them have ended (Succeeded or
// Failed) and returns them by name; ctx bounds it (the job's timeout).
// A watch the API server closes is listed and watched again.
func (k *Kube) wait(ctx context.Context, job string, n int) (map[string]*corev1.Pod, error) {
	sel := metav1.ListOptions{LabelSelector: LabelJob + "=" + job}
	pods := k.Client.CoreV1().Pods(k.Namespace)
	done := map[string]*corev1.Pod{}
	note := func(p *corev1.Pod) {
		if ended(p) {
			done[p.Name] = p
		}
	}
	for {
		list, err := pods.List(ctx, sel)
		if err != nil {
			return done, k.waitErr(ctx, err)
		}
		for i := range list.Items {
			note(&list.Items[i])
		}
		if len(done) >= n {
			return done, nil
		}
		opts := sel
		opts.ResourceVersion = list.ResourceVersion
		w, err := pods.Watch(ctx, opts)
		if err != nil {
			return done, k.waitErr(ctx, err)
		}
		err = k.events(ctx, w, note, func() bool { return len(done) >= n })
		w.Stop()
		switch {
		case err != nil:
			return done, err
		case len(done) >= n:
			return done, nil
		}
		// the watch ended (the API server closes watches): list again
	}
}

// events reads a watch until finished says so, the watch closes (nil)
// or ctx ends.
func (k *Kube) events(ctx context.Context, w watch.Interface, note func(*corev1.Pod), finished func() bool) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			p, isPod := ev.Object.(*corev1.Pod)
			switch {
			case ev.Type == watch.Error:
				return nil // e.g. a resourceVersion too old: list again
			case !isPod:
			case ev.Type == watch.Deleted && !ended(p):
				return fmt.Errorf("pod %s on node %s was deleted before it ended (by someone else)", p.Name, p.Spec.NodeName)
			default:
				note(p)
			}
			if finished() {
				return nil
			}
		}
	}
}

func (k *Kube) waitErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("watching the pods: %w", err)
}
