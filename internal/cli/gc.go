package cli

import (
	"os"
	"runtime/debug"
)

// GC settings for a short command that evaluates CUE: vetting a
// 100-module site allocates about 250 MB of which little lives, and at
// Go's default (GOGC=100) the collector spends a third of the process's
// CPU. At 400 it collects a quarter as often for about 5 % more peak
// memory there (220 → 229 MB); the soft limit brings the collector back
// to its usual pace before a large site's heap grows past it. GOGC and
// GOMEMLIMIT in the environment win.
const (
	GCPercent   = 400
	MemoryLimit = 2 << 30
)

// TuneGC applies GCPercent and MemoryLimit unless the environment sets
// GOGC or GOMEMLIMIT.
func TuneGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(GCPercent)
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok {
		debug.SetMemoryLimit(MemoryLimit)
	}
}
