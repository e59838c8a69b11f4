package kubeexec

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/seamdc/seam/internal/burnin"
)

// The job's exit code and error from its pods' ended states (no API
// server: client-go's fake answers the log with "fake logs").
func TestOutputFromEndedPods(t *testing.T) {
	term := func(code int32, msg string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: Container,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg}}}}}}
	}
	rejected := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfnvidia.com/gpu", Message: "Node didn't have enough resource"}}
	for _, tc := range []struct {
		name  string
		ranks []*corev1.Pod
		exit  int
		err   string
	}{
		{"all passed", []*corev1.Pod{term(0, ""), term(0, "")}, 0, ""},
		{"rank 0 failed", []*corev1.Pod{term(2, "line 1\nno CUDA-capable device"), term(0, "")}, 2, "all_reduce_perf on n[1-2]: exit 2: no CUDA-capable device"},
		{"another rank failed", []*corev1.Pod{term(0, ""), term(3, "rank 1 died")}, 3, "exit 3: rank 1 died"},
		{"a pod the kubelet refused", []*corev1.Pod{term(0, ""), rejected}, 0, "pod p1 on node n2 ended Failed before its container ran: OutOfnvidia.com/gpu Node didn't have enough resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &Kube{Client: fake.NewClientset(), Namespace: ns}
			j := burnin.Job{Step: "rack", Nodes: []string{"n1", "n2"}, Command: []string{"all_reduce_perf"}}
			pods := []*corev1.Pod{{}, {}}
			final := map[string]*corev1.Pod{}
			for i, p := range pods {
				p.Name, p.Spec.NodeName = []string{"p0", "p1"}[i], j.Nodes[i]
				final[p.Name] = tc.ranks[i]
			}
			o := k.output(context.Background(), j, pods, final)
			if tc.err == "" {
				assert.NoError(t, o.Err)
				assert.Equal(t, "fake logs", string(o.Stdout))
			} else {
				assert.ErrorContains(t, o.Err, tc.err)
			}
			assert.Equal(t, tc.exit, o.Exit)
		})
	}
}
