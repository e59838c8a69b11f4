package cli

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoggerForAPerson(t *testing.T) {
	var b strings.Builder
	log := Logger(&b, "sat run", "text", slog.LevelWarn)
	log.Info("not shown")
	log.Warn("heartbeat late", "bank", "lb-ma", "late", "120ms")
	log.With("device", "pdu-1").Error("read failed")
	assert.Equal(t, "sat run: warning: heartbeat late (bank=lb-ma, late=120ms)\nsat run: error: read failed (device=pdu-1)\n", b.String())
	assert.NotContains(t, b.String(), "level=")
}

func TestLoggerForAMachine(t *testing.T) {
	var b strings.Builder
	Logger(&b, "sat run", "json", slog.LevelInfo).Info("case started", "case", "sat.p1-ma.steady.voltage")
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(b.String()), &line))
	assert.Equal(t, "case started", line["msg"])
	assert.Equal(t, "INFO", line["level"])
	assert.Equal(t, "sat.p1-ma.steady.voltage", line["case"])
}
