package plan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// indent lays out the plans exactly as encoding/json's own indenting
// encoder does: the example's plans and values with every kind of
// string escape, empty and nested containers.
func TestIndentIsEncodingJSONs(t *testing.T) {
	values := []any{
		map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{map[string]any{}, []any{1, 2}}, "d": nil},
		[]any{"quote \" inside", `back\slash`, "tab\tnewline\n", "ünïcode ≤ 1.5×", "<html>&", "\u2028", "ends with \\"},
		[]any{1.5e-9, -0.0, uint64(12345678901234567890), true, false},
		"",
		[]any{[]any{[]any{}}},
	}
	plans, err := filepath.Glob("../../contracts/examples/threemodule/plans/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, plans)
	for _, f := range plans {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var p Plan
		require.NoError(t, json.Unmarshal(b, &p), f)
		values = append(values, &p)
	}
	for i, v := range values {
		var want, compact bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		require.NoError(t, enc.Encode(v))
		enc = json.NewEncoder(&compact)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(v))
		got := indent(bytes.TrimSuffix(compact.Bytes(), []byte("\n")))
		assert.True(t, bytes.Equal(want.Bytes(), got), "value %d: indent differs from encoding/json's (%d bytes against %d)", i, len(got), want.Len())
	}
}
