package cueload

import (
	"fmt"
	"sort"
	"strings"

	"cuelang.org/go/cue"
)

// closestField suggests the allowed field nearest to a misspelt one at
// path: a label of the parent struct (optional fields included) within
// an edit distance of three.
func (r *Result) closestField(path []string) string {
	if len(path) < 2 || !r.Value.Exists() {
		return ""
	}
	bad := strings.Trim(path[len(path)-1], `"`)
	parent := r.Value.LookupPath(cue.MakePath(selectors(path[:len(path)-1])...))
	it, err := parent.Fields(cue.Optional(true))
	if err != nil {
		return ""
	}
	var fields []string
	for it.Next() {
		if l := it.Selector().Unquoted(); l != bad {
			fields = append(fields, l)
		}
	}
	if g := Closest(bad, fields); len(g) > 0 {
		return g[0]
	}
	return ""
}

// EditDistance is the Levenshtein distance between a and b.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// closestAlternative suggests the allowed value nearest to a wrong one.
func closestAlternative(got string, alts []string) string {
	bare := make([]string, len(alts))
	for i, a := range alts {
		bare[i] = strings.Trim(a, `"`)
	}
	if g := Closest(strings.Trim(got, `"`), bare); len(g) > 0 {
		return fmt.Sprintf("did you mean %q?", g[0])
	}
	return "use one of the values listed"
}

// Labels returns the field labels of a struct value, sorted.
func Labels(v cue.Value) []string {
	it, err := v.Fields()
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		out = append(out, it.Selector().Unquoted())
	}
	sort.Strings(out)
	return out
}

// Closest returns the names nearest to s within an edit distance of
// three (all of them on a tie), for "did you mean".
func Closest(s string, names []string) []string {
	var best []string
	bestD := 4
	for _, n := range names {
		switch d := EditDistance(s, n); {
		case d < bestD:
			best, bestD = []string{n}, d
		case d == bestD:
			best = append(best, n)
		}
	}
	return best
}

// DidYouMean is the hint for an unknown name: the closest known names,
// or else the known names themselves.
func DidYouMean(s string, names []string) string {
	if g := Closest(s, names); len(g) > 0 && len(g) <= 3 {
		quoted := make([]string, len(g))
		for i, x := range g {
			quoted[i] = fmt.Sprintf("%q", x)
		}
		return "did you mean " + strings.Join(quoted, " or ") + "?"
	}
	if len(names) > 12 {
		names = append(names[:12:12], "…")
	}
	return "known: " + strings.Join(names, ", ")
}
