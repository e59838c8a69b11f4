package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
)

func TestScanSamples(t *testing.T) {
	in := "channel,time,value,quality\n" +
		"p1/ma/feed-a/voltage,2026-11-29T12:00:00.1Z,415.5,good\n" +
		"l1/ma/flow,2026-11-29T12:00:00.2Z,3400,stale\n" +
		"p1/ma/feed-a/voltage,2026-11-29T12:00:00.3Z,-1e-3,good\n"
	var got []evidence.Sample
	var offsets []int64
	require.NoError(t, scanSamples(strings.NewReader(in), "samples.csv", func(s evidence.Sample, at int64) error {
		got = append(got, s)
		offsets = append(offsets, at)
		return nil
	}))
	assert.Equal(t, []int64{27, 82, 127}, offsets, "byte offsets of the rows")
	require.Len(t, got, 3)
	assert.Equal(t, evidence.Sample{Channel: "p1/ma/feed-a/voltage", Time: at(0.1), Value: 415.5, Quality: "good"}, got[0])
	assert.Equal(t, "stale", got[1].Quality)
	assert.Equal(t, -0.001, got[2].Value)
}

func TestScanSamplesBadInput(t *testing.T) {
	const h = "channel,time,value,quality\n"
	tests := []struct{ name, in, want string }{
		{"empty", "", "x.csv: empty, not even a header"},
		{"wrong header", "a,b,c,d\n", `x.csv line 1: header "a,b,c,d"`},
		{"few fields", h + "c,2026-11-29T12:00:00Z\n", "x.csv line 2: 2 fields, want 4"},
		{"shifted fields", h + "c,2026-11-29T12:00:00Z,1,good,x\n", `x.csv line 2: channel c,2026-11-29T12:00:00Z: time "1": not RFC 3339`},
		{"bad time", h + "ok,2026-11-29T12:00:00Z,1,good\nc,yesterday,1,good\n", `x.csv line 3: channel c: time "yesterday": not RFC 3339`},
		{"bad value", h + "c,2026-11-29T12:00:00Z,4l5,good\n", `x.csv line 2: channel c: value "4l5": not a number`},
		{"empty channel", h + ",2026-11-29T12:00:00Z,1,good\n", "x.csv line 2: empty channel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := scanSamples(strings.NewReader(tt.in), "x.csv", func(evidence.Sample, int64) error { return nil })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestScanSamplesStopsOnCallbackError(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, evidence.SamplesFile),
		[]byte("channel,time,value,quality\nc,2026-11-29T12:00:00Z,1,good\nc,2026-11-29T12:00:01Z,2,good\n"), 0o644))
	stop := errors.New("stop")
	n := 0
	err := ScanSamples(dir, func(evidence.Sample) error { n++; return stop })
	assert.Same(t, stop, err)
	assert.Equal(t, 1, n)
	assert.ErrorContains(t, ScanSamples(t.TempDir(), nil), "samples: open")
}
