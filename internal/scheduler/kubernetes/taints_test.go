package kubernetes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestTaints(t *testing.T) {
	ns := corev1.TaintEffectNoSchedule
	for _, tc := range []struct {
		reason string
		want   []corev1.Taint
	}{
		{"facility:cooling_redundancy_lost:l2", []corev1.Taint{{Key: "facility.hold.seam.io/cooling_redundancy_lost", Value: "l2", Effect: ns}}},
		{"facility:cooling_redundancy_lost:l2 maintenance:CHG-1234", []corev1.Taint{
			{Key: "facility.hold.seam.io/cooling_redundancy_lost", Value: "l2", Effect: ns},
			{Key: "hold.seam.io/maintenance", Value: "CHG-1234", Effect: ns}}},
		{"facility:leak_detected:l2 facility:leak_detected:l3", []corev1.Taint{{Key: "facility.hold.seam.io/leak_detected", Value: "l2_l3", Effect: ns}}},
		{"facility:ups_on_battery:p1/a +2 more", []corev1.Taint{{Key: "facility.hold.seam.io/ups_on_battery", Value: "p1-a", Effect: ns}}},
		{"person:alice rma:CASE#7", []corev1.Taint{{Key: "hold.seam.io/person", Value: "alice", Effect: ns}, {Key: "hold.seam.io/rma", Value: "CASE-7", Effect: ns}}},
		{"maintenance:CHG-1 maintenance:CHG-2", []corev1.Taint{{Key: "hold.seam.io/maintenance", Value: "CHG-1_CHG-2", Effect: ns}}},
		{"+more", nil},
	} {
		got := Taints(tc.reason)
		if len(got) != len(tc.want) {
			t.Errorf("Taints(%q) = %v, want %v", tc.reason, got, tc.want)
			continue
		}
		for i := range got {
			if !sameTaint(got[i], tc.want[i]) {
				t.Errorf("Taints(%q)[%d] = %v, want %v", tc.reason, i, got[i], tc.want[i])
			}
			if !Ours(got[i]) {
				t.Errorf("Taints(%q)[%d] = %v is not recognised as facilityd's", tc.reason, i, got[i])
			}
		}
	}
}

func TestLongNamesStayValid(t *testing.T) {
	long := "maintenance:CHG-" + strings.Repeat("a", 80)
	a, b := Taints(long+"1"), Taints(long+"2")
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("got %v and %v", a, b)
	}
	if a[0].Value == b[0].Value {
		t.Errorf("two long owners share the value %s", a[0].Value)
	}
	if len(a[0].Value) > 63 {
		t.Errorf("value %q longer than 63", a[0].Value)
	}
}

func TestOursIgnoresOthersAndNoExecute(t *testing.T) {
	for _, tc := range []struct {
		t    corev1.Taint
		want bool
	}{
		{corev1.Taint{Key: "facility.hold.seam.io/x", Effect: corev1.TaintEffectNoSchedule}, true},
		{corev1.Taint{Key: "facility.hold.seam.io/x", Effect: corev1.TaintEffectNoExecute}, false},
		{corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}, false},
		{corev1.Taint{Key: "example.com/hold.seam.io", Effect: corev1.TaintEffectNoSchedule}, false},
		{corev1.Taint{Key: "nothold.seam.io/x", Effect: corev1.TaintEffectNoSchedule}, false},
		{corev1.Taint{Key: "hold.seam.io/person", Value: "alice", Effect: corev1.TaintEffectNoSchedule}, true},
		{corev1.Taint{Key: "x.hold.seam.io/person", Effect: corev1.TaintEffectNoSchedule}, false},
	} {
		if got := Ours(tc.t); got != tc.want {
			t.Errorf("Ours(%v) = %v, want %v", tc.t, got, tc.want)
		}
	}
}
