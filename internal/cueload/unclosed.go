package cueload

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seamdc/seam/internal/diag"
)

// unclosed points a syntax error found at the end of a file ("expected
// '}', found 'EOF'") at what caused it: the innermost brace, bracket or
// parenthesis that is still open when the file ends — the stray opener,
// or the block whose closer is missing.
func (r *Result) unclosed(d *diag.Diagnostic) {
	b, ok := r.source(d)
	if !ok {
		return
	}
	line, col, open := openAtEnd(b)
	if line == 0 {
		return
	}
	d.Pos = diag.Pos{File: d.Pos.Resolved().File, Line: line, Col: col}
	d.Message = fmt.Sprintf("the %q opened here is never closed: the file ends first (%s)", open, d.Message)
	d.Hint = fmt.Sprintf("close it, or remove it if it is one %q too many; the mistake is at or after this line", open)
}

// rawString reports whether b starts a #"raw"# string: hashes, then a
// quote (a lone # starts a definition's name).
func rawString(b []byte) bool {
	n := 0
	for n < len(b) && b[n] == '#' {
		n++
	}
	return n < len(b) && b[n] == '"'
}

// bracket is a brace, bracket or parenthesis outside strings and
// comments: where it is, and the indentation of its line.
type bracket struct {
	c              byte
	line, col, ind int
	starts         bool // only blanks precede it on its line
}

// scanBrackets lists the brackets of b, skipping strings (also
// multi-line and #"raw"# ones) and comments; false for an unterminated
// string (CUE reports that one itself).
func scanBrackets(b []byte) ([]bracket, bool) {
	var out []bracket
	ln, cl := 1, 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		cl++
		switch {
		case c == '\n':
			ln, cl = ln+1, 0
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			ln, cl = ln+1, 0
		case c == '"' || (c == '#' && rawString(b[i:])):
			hashes := 0
			for b[i+hashes] == '#' {
				hashes++
			}
			q := i + hashes
			quote := `"`
			if q+2 < len(b) && b[q+1] == '"' && b[q+2] == '"' {
				quote = `"""`
			}
			end := quote + strings.Repeat("#", hashes)
			j := bytes.Index(b[q+len(quote):], []byte(end))
			if j < 0 {
				return nil, false
			}
			skipped := b[i : q+len(quote)+j+len(end)]
			if n := bytes.Count(skipped, []byte{'\n'}); n > 0 {
				ln, cl = ln+n, len(skipped)-bytes.LastIndexByte(skipped, '\n')-1
			} else {
				cl += len(skipped) - 1
			}
			i += len(skipped) - 1
		case strings.IndexByte("{[()]}", c) >= 0:
			ind, starts := indentAt(b, i)
			out = append(out, bracket{c, ln, cl, ind, starts})
		}
	}
	return out, true
}

// indentAt is the indentation of the line of b[i], and whether only
// blanks precede b[i] on it.
func indentAt(b []byte, i int) (int, bool) {
	start := bytes.LastIndexByte(b[:i], '\n') + 1
	n := 0
	for start+n < i && (b[start+n] == ' ' || b[start+n] == '\t') {
		n++
	}
	return n, start+n == i
}

// openAtEnd finds the opener a file that ends too early leaves open:
// the first opener closed by a closer that starts a line less or more
// indented than the opener's line (formatted CUE lines its closers up
// with their openers: a stray opener or a missing closer breaks that
// right after itself), else the innermost opener still open at the end;
// line 0 when all are closed.
func openAtEnd(b []byte) (line, col int, open byte) {
	brackets, ok := scanBrackets(b)
	if !ok {
		return 0, 0, 0
	}
	var stack []bracket
	var first *bracket
	for _, k := range brackets {
		if strings.IndexByte("{[(", k.c) >= 0 {
			stack = append(stack, k)
			continue
		}
		if len(stack) == 0 {
			continue
		}
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if k.starts && k.ind != top.ind && first == nil {
			first = &top
		}
	}
	if len(stack) == 0 {
		return 0, 0, 0
	}
	top := stack[len(stack)-1]
	if first != nil {
		top = *first
	}
	return top.line, top.col, top.c
}

// source is the file a diagnostic points into, read again.
func (r *Result) source(d *diag.Diagnostic) ([]byte, bool) {
	name := d.Pos.Resolved().File
	if name == "" {
		return nil, false
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(r.Dir, name)
	}
	b, err := os.ReadFile(name)
	return b, err == nil
}

// strayCloser points a syntax error found at a closer the file does
// not expect ("expected 'EOF', found '}'": CUE sees it at the end, where
// the closers run out) at the line whose opener is missing.
func (r *Result) strayCloser(d *diag.Diagnostic) {
	b, ok := r.source(d)
	if !ok {
		return
	}
	line, col, open, closer := missingOpener(b)
	if line == 0 {
		return
	}
	d.Message = fmt.Sprintf("a %q seems missing at the end of this line: the %q at %d:%d closes a block this line should open (%s)", open, closer.c, closer.line, closer.col, d.Message)
	d.Hint = fmt.Sprintf("open the block with %q here, or remove the %q at line %d if it is one too many", open, closer.c, closer.line)
	d.Pos = diag.Pos{File: d.Pos.Resolved().File, Line: line, Col: col}
}

// missingOpener finds where a file with one closer too many lacks its
// opener. The culprit closer is the first that closes nothing, or that
// starts a line indented otherwise than its opener's line (formatted CUE
// lines its closers up with their openers: a missing opener makes the
// closer of its block close the enclosing one); the opener belongs at
// the end of the nearest line before it indented no deeper than it, the
// line whose block it ends. line 0 when there is no such closer.
func missingOpener(b []byte) (line, col int, open byte, closer bracket) {
	brackets, ok := scanBrackets(b)
	if !ok {
		return 0, 0, 0, bracket{}
	}
	pair := map[byte]byte{'}': '{', ']': '[', ')': '('}
	var stack []bracket
	found := false
	for _, k := range brackets {
		if _, isClose := pair[k.c]; !isClose {
			stack = append(stack, k)
			continue
		}
		if len(stack) == 0 {
			closer, found = k, true
			break
		}
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if k.starts && k.ind != top.ind {
			closer, found = k, true
			break
		}
	}
	if !found || !closer.starts {
		return 0, 0, 0, bracket{}
	}
	lines := strings.Split(string(b), "\n")
	for l := closer.line - 1; l >= 1; l-- {
		text := strings.TrimRight(lines[l-1], " \t\r")
		trimmed := strings.TrimLeft(text, " \t")
		if trimmed == "" || strings.HasPrefix(trimmed, "//") {
			continue
		}
		if len(text)-len(trimmed) <= closer.ind {
			if c := strings.Index(text, "//"); c >= 0 && !strings.Contains(text[:c], `"`) {
				text = strings.TrimRight(text[:c], " \t")
			}
			return l, len(text) + 1, pair[closer.c], closer
		}
	}
	return 0, 0, 0, bracket{}
}
