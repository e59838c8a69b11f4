// Package kubernetes is facilityd's Kubernetes drain backend, through
// client-go: a hold is a NoSchedule taint facilityd owns (its key and
// value name the hold's owner) plus an annotation with the reason;
// spec.unschedulable (a cordon, a flag everyone shares) is set only when
// the site opts in and cleared only when facilityd set it; a cordon or
// taint made by someone else is never undone, and NoExecute is never
// written. checkpoint_now reaches opted-in pods as an annotation and an
// Event. Every node write is a patch carrying the resourceVersion read
// just before (a stale write is refused by the API server) and, under
// high availability, the leader's epoch: a node written by a newer
// leader is never written by an older one.
//
// It is a package of its own, not a file of internal/scheduler, so that
// client-go's weight falls only on the programs that drain Kubernetes.
package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The names facilityd writes on Nodes and Pods.
const (
	// TaintDomain is the prefix of every taint key facilityd owns:
	// hold.seam.io/<owner kind>, facility.hold.seam.io/<alarm type>.
	TaintDomain = "hold.seam.io"
	// AnnReason is the reason of facilityd's holds on a node, as Slurm
	// would show it: the holds' tags, facility holds first.
	AnnReason = "facilityd.seam.io/reason"
	// AnnCordoned marks a cordon (spec.unschedulable) facilityd set
	// itself: only then does a release clear it.
	AnnCordoned = "facilityd.seam.io/cordoned"
	// AnnEpoch and AnnLeader name the leader that wrote the node last,
	// and its epoch (the Lease's transitions): a node carrying a newer
	// epoch is never written by an older leader.
	AnnEpoch  = "facilityd.seam.io/epoch"
	AnnLeader = "facilityd.seam.io/leader"
	// AnnOptIn is how a pod opts in to checkpoint_now: its value holds
	// the same words a Slurm job's comment would (seam:checkpoint_now,
	// or seam:checkpoint_now=full).
	AnnOptIn = "facilityd.seam.io/opt-in"
	// AnnCheckpointNow is written on an opted-in pod when its node is
	// held: "<RFC 3339 time> <signal>". A pod sees it through a
	// downwardAPI volume of metadata.annotations, which the kubelet
	// keeps up to date.
	AnnCheckpointNow = "facilityd.seam.io/checkpoint-now"
	// EventReason is the reason of the Event sent with it.
	EventReason = "CheckpointNow"
)

// Taints are the NoSchedule taints of a reason: one per tag (an owner
// as a reason shows it, kind:name). A facility hold's key names its
// alarm type and its value the domain,
// facility.hold.seam.io/cooling_redundancy_lost=l2; any other owner's
// key names its kind and its value the name,
// hold.seam.io/maintenance=CHG-1234. Keys come from a fixed vocabulary
// (the alarm types, the owner kinds), so a DaemonSet can tolerate them.
// A "+N more" of a reason cut short places no taint (the annotation
// keeps the reason); two tags with one key share its taint, their
// values joined by "_".
func Taints(reason string) []corev1.Taint {
	values := map[string][]string{}
	for _, tag := range strings.Fields(reason) {
		kind, name, ok := strings.Cut(tag, ":")
		if !ok || kind == "" || name == "" {
			continue // "+2 more", "+more"
		}
		key, value := TaintDomain+"/"+sanitize(kind, 63), name
		if kind == "facility" {
			first, rest, _ := strings.Cut(name, ":")
			key, value = "facility."+TaintDomain+"/"+sanitize(first, 63), rest
		}
		if !slices.Contains(values[key], value) {
			values[key] = append(values[key], value)
		}
	}
	var out []corev1.Taint
	for _, key := range sortedKeys(values) {
		vs := values[key]
		slices.Sort(vs)
		v := strings.Trim(strings.Join(vs, "_"), "_")
		out = append(out, corev1.Taint{Key: key, Value: sanitizeValue(v), Effect: corev1.TaintEffectNoSchedule})
	}
	return out
}

// Ours reports whether a taint is one facilityd owns.
func Ours(t corev1.Taint) bool {
	prefix, _, ok := strings.Cut(t.Key, "/")
	return ok && (prefix == TaintDomain || prefix == "facility."+TaintDomain) && t.Effect == corev1.TaintEffectNoSchedule
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sanitize makes s a taint key's name part (or a DNS label for the
// kind): letters, digits, '-', '_', '.', starting and ending with a
// letter or digit, at most max characters (cut with a hash to stay
// distinct).
func sanitize(s string, max int) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-_.")
	if len(out) > max {
		sum := sha256.Sum256([]byte(s))
		out = strings.Trim(out[:max-9], "-_.") + "-" + hex.EncodeToString(sum[:4])
	}
	if out == "" {
		out = "x"
	}
	return out
}

func sanitizeValue(s string) string {
	if s == "" {
		return ""
	}
	return sanitize(s, 63)
}
