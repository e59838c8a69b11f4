package cueload

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// openAtEnd names the opener a file that ends too early leaves open.
func TestOpenAtEnd(t *testing.T) {
	tests := []struct {
		name, src string
		line, col int
		open      byte
	}{
		{"balanced", "a: {\n\tb: [1, 2]\n}\n", 0, 0, 0},
		{"stray opener", "a: {\n\tb: {{c: 1}\n\td: 2\n}\n", 2, 5, '{'},
		{"missing closer", "a: {\n\tb: {c: 1\n\td: 2\n}\n", 2, 5, '{'},
		{"braces in strings and comments", "a: {\n\tb: \"{\" // {\n\tc: #\"}\"#\n\td: \"\"\"\n\t\t{\n\t\t\"\"\"\n", 1, 4, '{'},
		{"a definition is not a raw string", "#A: {\n\tb: 1\n", 1, 5, '{'},
		{"an unterminated string is CUE's to report", "a: \"{\n", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, col, open := openAtEnd([]byte(tt.src))
			assert.Equal(t, []any{tt.line, tt.col, tt.open}, []any{line, col, open})
		})
	}
}

// missingOpener finds the line that lacks the opener of a block whose
// closer CUE finds too many.
func TestMissingOpener(t *testing.T) {
	tests := []struct {
		name, src string
		line, col int
		open      byte
	}{
		{"balanced", "a: {\n\tb: [1, 2]\n}\n", 0, 0, 0},
		{"inner block", "a: {\n\tb: // the b\n\t\tc: 1\n\t}\n\td: 2\n}\n", 2, 4, '{'},
		{"outer block", "// a\na:\n\tb: {c: 1}\n\td: 2\n}\n", 2, 3, '{'},
		{"list", "a: {\n\tb:\n\t\t1,\n\t]\n}\n", 2, 4, '['},
		{"braces in strings", "a: {\n\tb: \"{\"\n\t\tc: 1\n\t}\n}\n", 2, 8, '{'},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, col, open, _ := missingOpener([]byte(tt.src))
			assert.Equal(t, []any{tt.line, tt.col, tt.open}, []any{line, col, open})
		})
	}
}
