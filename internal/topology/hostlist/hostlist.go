// Package hostlist reads and writes Slurm's hostlist expressions:
// "gpu-a-r01-n[01-18],gpu-a-r02-n[01-18]". Compress writes a list of
// names as Slurm writes them (a bracket of ranges per prefix, zero
// padding kept); Expand reads one back, including the forms Slurm writes
// and some it only reads (a suffix after a bracket, several brackets in
// one name).
package hostlist

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxHosts bounds how many names one expression may expand to: a typo
// such as n[0-99999999] is an error, not a memory blow-up.
const MaxHosts = 1 << 22

// name is a host name split into its prefix and its trailing number.
type name struct {
	prefix, digits string
	num            uint64
	numeric        bool
}

func split(s string) name {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	// a number too long for uint64 is kept as text
	if i == len(s) || len(s)-i > 18 {
		return name{prefix: s}
	}
	n, _ := strconv.ParseUint(s[i:], 10, 64)
	return name{prefix: s[:i], digits: s[i:], num: n, numeric: true}
}

// pad formats n at width w, as Slurm does ("%0*lu").
func pad(n uint64, w int) string {
	s := strconv.FormatUint(n, 10)
	if len(s) < w {
		s = strings.Repeat("0", w-len(s)) + s
	}
	return s
}

// Compress writes names as one hostlist expression: sorted by prefix and
// number, duplicates dropped, runs of numbers under one prefix as
// ranges ("n[01-03,05]"), a prefix with one name written plainly.
func Compress(names []string) string {
	var b strings.Builder
	CompressTo(&b, names)
	return b.String()
}

// CompressTo is Compress writing to b.
func CompressTo(b *strings.Builder, names []string) {
	parts := make([]name, 0, len(names))
	for _, s := range names {
		parts = append(parts, split(s))
	}
	slices.SortFunc(parts, func(x, y name) int {
		if c := strings.Compare(x.prefix, y.prefix); c != 0 {
			return c
		}
		if c := cmp.Compare(b2i(x.numeric), b2i(y.numeric)); c != 0 {
			return c
		}
		if c := cmp.Compare(x.num, y.num); c != 0 {
			return c
		}
		return cmp.Compare(len(x.digits), len(y.digits))
	})
	parts = slices.Compact(parts)
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && parts[j].prefix == parts[i].prefix && parts[j].numeric == parts[i].numeric {
			j++
		}
		if i > 0 {
			b.WriteByte(',')
		}
		writeGroup(b, parts[i:j])
		i = j
	}
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// writeGroup writes names of one prefix.
func writeGroup(b *strings.Builder, g []name) {
	if !g[0].numeric {
		b.WriteString(g[0].prefix)
		return
	}
	b.WriteString(g[0].prefix)
	if len(g) == 1 {
		b.WriteString(g[0].digits)
		return
	}
	b.WriteByte('[')
	for i := 0; i < len(g); {
		lo, w := g[i], len(g[i].digits)
		j := i
		for j+1 < len(g) && g[j+1].num == g[j].num+1 && pad(g[j+1].num, w) == g[j+1].digits {
			j++
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(lo.digits)
		if j > i {
			b.WriteByte('-')
			b.WriteString(g[j].digits)
		}
		i = j + 1
	}
	b.WriteByte(']')
}

// Expand reads a hostlist expression into its names, in the order
// written. Commas outside brackets separate terms; a term may hold
// brackets of comma-separated numbers and ranges, whose width is that of
// the range's first number ("[08-10]" is 08, 09, 10).
func Expand(expr string) ([]string, error) {
	var out []string
	err := Each(expr, func(s string) error {
		if len(out) >= MaxHosts {
			return fmt.Errorf("hostlist %s: more than %d names", short(expr), MaxHosts)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// Each calls f with each name of expr, in order.
func Each(expr string, f func(string) error) error {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil
	}
	depth, start := 0, 0
	for i := 0; i <= len(expr); i++ {
		if i < len(expr) {
			switch expr[i] {
			case '[':
				if depth > 0 {
					return fmt.Errorf("hostlist %s: a bracket inside a bracket at column %d", short(expr), i+1)
				}
				depth++
				continue
			case ']':
				if depth == 0 {
					return fmt.Errorf("hostlist %s: ']' without '[' at column %d", short(expr), i+1)
				}
				depth--
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		if depth > 0 {
			return fmt.Errorf("hostlist %s: '[' is never closed (truncated?)", short(expr))
		}
		term := expr[start:i]
		if term == "" {
			return fmt.Errorf("hostlist %s: an empty name at column %d", short(expr), start+1)
		}
		if err := expandTerm(expr, term, "", f); err != nil {
			return err
		}
		start = i + 1
	}
	return nil
}

// expandTerm expands the brackets of one term, left to right.
func expandTerm(expr, term, head string, f func(string) error) error {
	open := strings.IndexByte(term, '[')
	if open < 0 {
		return f(head + term)
	}
	end := strings.IndexByte(term[open:], ']') + open
	prefix, body, rest := term[:open], term[open+1:end], term[end+1:]
	if body == "" {
		return fmt.Errorf("hostlist %s: empty brackets in %q", short(expr), term)
	}
	for _, r := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, errA := number(lo)
		z, errZ := number(hi)
		if err := errors.Join(errA, errZ); err != nil {
			return fmt.Errorf("hostlist %s: range %q: %w", short(expr), r, err)
		}
		if z < a {
			return fmt.Errorf("hostlist %s: range %q runs backwards", short(expr), r)
		}
		if z-a >= MaxHosts {
			return fmt.Errorf("hostlist %s: range %q: more than %d names", short(expr), r, MaxHosts)
		}
		for n := a; n <= z; n++ {
			if err := expandTerm(expr, rest, head+prefix+pad(n, len(lo)), f); err != nil {
				return err
			}
		}
	}
	return nil
}

func number(s string) (uint64, error) {
	if s == "" {
		return 0, errors.New("a missing number")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a number", s)
		}
	}
	if len(s) > 18 {
		return 0, fmt.Errorf("%q is too long", s)
	}
	return strconv.ParseUint(s, 10, 64)
}

// short quotes an expression for an error, cut to a readable length.
func short(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:60] + "…" + s[len(s)-16:])
	}
	return strconv.Quote(s)
}

// CheckName reports why Slurm could not take s as a node or switch name:
// hostlist syntax (brackets, commas), white space, '=' and '#' (its
// configuration syntax), the reserved words DEFAULT and ALL, and names
// longer than max (0: no bound).
func CheckName(s string, max int) error {
	switch {
	case s == "":
		return errors.New("an empty name")
	case max > 0 && len(s) > max:
		return fmt.Errorf("%q is %d characters, longer than Slurm's %d", s, len(s), max)
	case (len(s) == 3 || len(s) == 7) && (strings.EqualFold(s, "DEFAULT") || strings.EqualFold(s, "ALL")):
		return fmt.Errorf("%q is a reserved word in slurm.conf", s)
	}
	// one pass over the bytes (vet checks every node's name); a byte
	// that is not a plain character is explained below
	plain := s[0] != '-' && s[0] != '.'
	for i := 0; plain && i < len(s); i++ {
		c := s[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
	}
	if plain {
		return nil
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return fmt.Errorf("%q has %q at position %d: Slurm names take letters, digits, '-', '_' and '.' (brackets and commas are hostlist syntax)", s, c, i+1)
		}
		if i == 0 && (c == '-' || c == '.') {
			return fmt.Errorf("%q starts with %q", s, c)
		}
	}
	return nil
}

// Abbrev writes names compactly for people: as Compress, but a suffix
// after the number that names share stays outside the bracket
// ("gpu-b-r07-n[01-09].cluster.example"). Slurm does not read that
// form; use it in messages only.
func Abbrev(names []string) string {
	heads := map[string][]string{}
	var suffixes []string
	for _, n := range names {
		i := strings.LastIndexFunc(n, func(r rune) bool { return r >= '0' && r <= '9' })
		head, suffix := n, ""
		if i >= 0 {
			head, suffix = n[:i+1], n[i+1:]
		}
		if _, ok := heads[suffix]; !ok {
			suffixes = append(suffixes, suffix)
		}
		heads[suffix] = append(heads[suffix], head)
	}
	slices.Sort(suffixes)
	var parts []string
	for _, s := range suffixes {
		for _, term := range terms(Compress(heads[s])) {
			parts = append(parts, term+s)
		}
	}
	return strings.Join(parts, ",")
}

// terms splits an expression at the commas outside brackets.
func terms(expr string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(expr); i++ {
		switch expr[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, expr[start:i])
				start = i + 1
			}
		}
	}
	return append(out, expr[start:])
}
