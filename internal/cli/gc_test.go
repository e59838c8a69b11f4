package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, tc := range []struct {
		name    string
		env     map[string]string
		percent int
		limit   int64
	}{
		{"defaults", nil, GCPercent, MemoryLimit},
		{"GOGC wins", map[string]string{"GOGC": "50"}, 100, MemoryLimit},
		{"GOMEMLIMIT wins, and the collector stays on", map[string]string{"GOMEMLIMIT": "off"}, GCPercentWithLimit, 1 << 40},
		{"both win", map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}, 100, 1 << 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
				v, ok := tc.env[k]
				if !ok {
					old, had := os.LookupEnv(k)
					os.Unsetenv(k)
					if had {
						t.Cleanup(func() { os.Setenv(k, old) })
					}
					continue
				}
				t.Setenv(k, v)
			}
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(1 << 40)
			TuneGC()
			if got := debug.SetGCPercent(100); got != tc.percent {
				t.Errorf("GC percent %d, want %d", got, tc.percent)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.limit {
				t.Errorf("memory limit %d, want %d", got, tc.limit)
			}
		})
	}
}
