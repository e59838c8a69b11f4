package satcmd

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/probe"
)

// A reading that is bad for its value (implausible: the scale is
// suspect) keeps its raw number in --format json; one that was never
// read has none.
func TestProbeJSONKeepsTheRawOfABadReading(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, renderJSON(&b, []probe.ChannelReading{
		{Name: "p1/ma/feed-a/voltage", Reading: probe.Reading{Device: "pdu", Point: "v", Raw: 41500, HasRaw: true, Quality: probe.Bad, Err: errors.New("4150 V is outside the plausible range")}},
		{Name: "p1/ma/frequency", Reading: probe.Reading{Device: "pdu", Point: "f", Quality: probe.Bad, Err: errors.New("timed out after 1s")}},
	}))
	out := b.String()
	assert.Contains(t, out, `"raw": 41500`)
	assert.Equal(t, 1, bytes.Count(b.Bytes(), []byte(`"raw"`)), out)
}
