package simconfig

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCapturesConfig(t *testing.T) {
	dir := write(t, `sim: {captures: {dir: "pq", offset: "-1.3 s", rate: "2000 Hz", post: "3 s", trigger: "1 %"}`+minimal+`}`)
	c, diags, err := Load(dir)
	require.NoError(t, err)
	require.Empty(t, diags)
	require.NotNil(t, c.Captures)
	assert.Equal(t, Captures{Dir: filepath.Join(dir, "pq"), OffsetS: -1.3, RateHz: 2000, PreS: 1, PostS: 3, TriggerPct: 1}, *c.Captures)

	c, diags, err = Load(write(t, `sim: {captures: {dir: "/abs/pq"}`+minimal+`}`))
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.Equal(t, Captures{Dir: "/abs/pq", RateHz: 1000, PreS: 1, PostS: 2, TriggerPct: 0.5}, *c.Captures, "the defaults")

	c, _, err = Load(write(t, `sim: {`+minimal+`}`))
	require.NoError(t, err)
	assert.Nil(t, c.Captures, "no analyser unless configured")

	for _, tc := range []struct{ body, want string }{
		{`captures: {dir: "pq", rate: "500 Hz"}`, "sim.captures.rate: 500 Hz; an analyser capture grades RMS per half cycle and needs at least 1000 Hz"},
		{`captures: {dir: "pq", offset: "1.3 V"}`, `sim.captures.offset: "1.3 V" is a voltage, want a time`},
		{`captures: {offset: "1 s"}`, "dir"},
	} {
		_, diags, err := Load(write(t, `sim: {`+tc.body+minimal+`}`))
		require.NoError(t, err)
		require.NotEmpty(t, diags, tc.body)
		assert.Contains(t, diags[0].Message, tc.want)
		assert.Equal(t, "sim.cue", diags[0].Pos.File)
	}
}
