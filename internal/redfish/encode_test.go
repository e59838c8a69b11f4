package redfish

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The export's encoder writes what encoding/json writes with four-space
// indents and no HTML escaping, only faster.
func TestAppendJSONIsEncodingJSON(t *testing.T) {
	doc := map[string]any{
		"Name":  "ma/r01 \"quoted\" \\ back\tslash\n<html> & é \u2028 \x01 \xff",
		"Empty": map[string]any{}, "None": []any{}, "Nil": nil,
		"Links": map[string]any{"Contains": []any{map[string]any{"@odata.id": "/redfish/v1/Chassis/a"}, map[string]any{"@odata.id": "/b"}}},
		"W":     int64(130000), "N": 7, "T": true, "F": false, "Zero": 0,
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	assert.NoError(t, enc.Encode(doc))
	assert.Equal(t, want.String(), string(appendJSON(nil, doc, 0))+"\n")
}
