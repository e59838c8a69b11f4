package contractc

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The N-1 summary says how far under or over its limit a PDU is, in
// words that need no sign ("-43.4 kW over" read as under).
func TestAgainstLimit(t *testing.T) {
	for _, tt := range []struct {
		headroom, limit float64
		want            string
	}{
		{6.6, 136.6, "6.6 kW under its continuous limit 136.6 kW"},
		{-43.4, 136.6, "43.4 kW over its continuous limit 136.6 kW"},
		{0, 136.6, "at its continuous limit 136.6 kW"},
	} {
		assert.Equal(t, tt.want, againstLimit(tt.headroom, tt.limit))
	}
}
