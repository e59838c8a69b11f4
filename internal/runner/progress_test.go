package runner

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Off a terminal, progress is plain lines: one per case, step and
// verdict.
func TestProgressPlain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t)
		var out strings.Builder
		cfg := g.config()
		cfg.Progress = &out
		_, err := g.run(cfg)
		require.NoError(t, err)
		golden := filepath.Join("testdata", "progress-plain.golden")
		if *update {
			require.NoError(t, os.WriteFile(golden, []byte(out.String()), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err)
		assert.Equal(t, string(want), out.String())
	})
}

// On a terminal, one status line is redrawn: case n of N, the step,
// elapsed and remaining site time, the latest readings.
func TestProgressTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t)
		var out strings.Builder
		cfg := g.config()
		cfg.Progress, cfg.Terminal = &out, true
		_, err := g.run(cfg)
		require.NoError(t, err)
		s := out.String()
		assert.Contains(t, s, "\r\033[K[1/3] sat.p1-ma.steady.voltage · step 3/4 hold · ")
		assert.Contains(t, s, " elapsed, ~")
		assert.Contains(t, s, " left · p1/ma/voltage 410 V")
		assert.Contains(t, s, "\r\033[K  PASS sat.p1-ma.steady.voltage (1 check)\n")
		assert.NotContains(t, s, "  step hold (hold)\n", "steps are in the status line, not printed")
	})
}
