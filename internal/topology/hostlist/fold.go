package hostlist

import (
	"fmt"
	"strings"
)

// Fold writes names as a host list for people: Compress's, with the
// racks whose nodes are the same folded into one bracket
// ("gpu-b-r[01-16]-n[01-18]" for sixteen racks of eighteen nodes, where
// Compress names each rack). Expand reads it back; for Slurm, use
// Compress.
func Fold(names []string) string {
	terms := terms(Compress(names))
	type group struct {
		prefix, rest string
		nums         []string
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, t := range terms {
		prefix, num, rest, ok := outerNumber(t)
		if !ok {
			groups = append(groups, &group{prefix: t})
			continue
		}
		key := prefix + "\x00" + rest + "\x00" + fmt.Sprint(len(num))
		g := byKey[key]
		if g == nil {
			g = &group{prefix: prefix, rest: rest}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.nums = append(g.nums, num)
	}
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		switch len(g.nums) {
		case 0:
			out = append(out, g.prefix)
		case 1:
			out = append(out, g.prefix+g.nums[0]+g.rest)
		default:
			out = append(out, g.prefix+"["+numRanges(g.nums)+"]"+g.rest)
		}
	}
	return strings.Join(out, ",")
}

// outerNumber splits a term such as "gpu-b-r01-n[01-18]" or
// "gpu-b-r01-n05" at the number before its last: "gpu-b-r", "01",
// "-n[01-18]". ok is false where it has no such number.
func outerNumber(t string) (prefix, num, rest string, ok bool) {
	head, tail := t, ""
	if i := strings.IndexByte(t, '['); i >= 0 {
		head, tail = t[:i], t[i:]
	}
	j := len(head)
	if tail == "" { // the node's own number ends the name
		for j > 0 && isDigit(head[j-1]) {
			j--
		}
	}
	k := j
	for k > 0 && !isDigit(head[k-1]) {
		k--
	}
	e := k
	for k > 0 && isDigit(head[k-1]) {
		k--
	}
	if k == e || e == j {
		return "", "", "", false
	}
	return head[:k], head[k:e], head[e:] + tail, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numRanges writes sorted, equally wide numbers as ranges: "01-16",
// "01-03,05".
func numRanges(nums []string) string {
	var b strings.Builder
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && atoi(nums[j+1]) == atoi(nums[j])+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(nums[i])
		if j > i {
			b.WriteString("-" + nums[j])
		}
		i = j + 1
	}
	return b.String()
}

func atoi(s string) int {
	n := 0
	for _, c := range []byte(s) {
		n = n*10 + int(c-'0')
	}
	return n
}
