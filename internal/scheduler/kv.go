package scheduler

import (
	"fmt"
	"strings"
)

// KV is one line of Slurm's key=value text — scontrol -o show node,
// reservation and jobs, scontrol show topology, topology.conf — its
// fields in the order written. It is the one parser of that text.
type KV struct {
	// Keys in order, as written.
	Keys []string
	// Stray is the first word without '=' that a value took in (the
	// words of OS=Linux 6.1.0 #1 SMP…, of a Reason=); "" when every word
	// was key=value. Output whose values never hold spaces (scontrol
	// show topology, topology.conf) treats one as an error.
	Stray string
	vals  map[string]string
}

// ParseKV splits line into its fields. A value runs to the next space,
// except that words without '=' after a field belong to its value,
// joined by one space (scontrol writes free text such as a node's
// Reason last). The first word must be key=value; a key given twice
// keeps its first value.
func ParseKV(line string) (KV, error) {
	kv := KV{vals: map[string]string{}}
	var last string
	for i, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			if i == 0 {
				return kv, fmt.Errorf("%q is not key=value", w)
			}
			if kv.Stray == "" {
				kv.Stray = w
			}
			if last != "" {
				kv.vals[last] += " " + w
			}
			continue
		}
		if _, dup := kv.vals[k]; dup {
			last = "" // a repeated key's words go nowhere
			continue
		}
		kv.Keys = append(kv.Keys, k)
		kv.vals[k] = v
		last = k
	}
	return kv, nil
}

// Get is key's value ("" when absent).
func (kv KV) Get(key string) string { return kv.vals[key] }

// Has reports whether the line has key.
func (kv KV) Has(key string) bool { _, ok := kv.vals[key]; return ok }

// First is the line's first key and its value.
func (kv KV) First() (key, value string) {
	if len(kv.Keys) == 0 {
		return "", ""
	}
	return kv.Keys[0], kv.vals[kv.Keys[0]]
}

// Null reads Slurm's placeholder for no value, (null), as "".
func Null(s string) string {
	if s == "(null)" {
		return ""
	}
	return s
}
