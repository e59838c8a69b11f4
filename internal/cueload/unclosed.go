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
	p := d.Pos.Resolved()
	if p.File == "" {
		return
	}
	name := p.File
	if !filepath.IsAbs(name) {
		name = filepath.Join(r.Dir, name)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return
	}
	line, col, open := openAtEnd(b)
	if line == 0 {
		return
	}
	d.Pos = diag.Pos{File: p.File, Line: line, Col: col}
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

// openAtEnd finds the opener a file that ends too early leaves open,
// skipping strings (also multi-line and #"raw"# ones) and comments: the
// first opener closed by a closer that starts a line less or more
// indented than the opener's line (formatted CUE lines its closers up
// with their openers: a stray opener or a missing closer breaks that
// right after itself), else the innermost opener still open at the end;
// line 0 when all are closed.
func openAtEnd(b []byte) (line, col int, open byte) {
	type at struct {
		c              byte
		line, col, ind int
	}
	var stack []at
	var first *at
	ln, cl := 1, 0
	indent := func(i int) (int, bool) { // the indentation of the line of b[i], and whether only blanks precede it
		start := bytes.LastIndexByte(b[:i], '\n') + 1
		n := 0
		for start+n < i && (b[start+n] == ' ' || b[start+n] == '\t') {
			n++
		}
		return n, start+n == i
	}
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
				return 0, 0, 0 // an unterminated string: CUE reports that one itself
			}
			skipped := b[i : q+len(quote)+j+len(end)]
			if n := bytes.Count(skipped, []byte{'\n'}); n > 0 {
				ln, cl = ln+n, len(skipped)-bytes.LastIndexByte(skipped, '\n')-1
			} else {
				cl += len(skipped) - 1
			}
			i += len(skipped) - 1
		case c == '{' || c == '[' || c == '(':
			ind, _ := indent(i)
			stack = append(stack, at{c, ln, cl, ind})
		case c == '}' || c == ']' || c == ')':
			if len(stack) == 0 {
				continue
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if ind, starts := indent(i); starts && ind != top.ind && first == nil {
				first = &top
			}
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
