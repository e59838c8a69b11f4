package cli

import (
	"os"
	"runtime/debug"
)

// GC settings for a short command that evaluates CUE: vetting the
// generated 100-module site allocates about 300 MB in all, of which
// little lives, and at Go's default (GOGC=100) the collector spent a
// third of the process's CPU; at GOGC=400 still a quarter (1.22 s of
// CPU against 0.85 s without collecting, median of five on an idle
// 2-core machine, the second core running the collector's idle
// workers). So the collector is off until the heap nears the soft
// limit (GOMEMLIMIT), where it takes over: a vet of that site peaks at
// 308 MB, a compile of all its levels at 632 MB, and a site whose heap
// would grow past the limit is collected there instead. GOGC and
// GOMEMLIMIT in the environment win; with only GOMEMLIMIT given (it
// may say off) the collector runs at GCPercentWithLimit.
const (
	GCPercent          = -1 // off: the soft limit starts it
	GCPercentWithLimit = 400
	MemoryLimit        = 2 << 30
)

// TuneGC applies GCPercent and MemoryLimit unless the environment sets
// GOGC or GOMEMLIMIT.
func TuneGC() {
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	switch {
	case gogc:
	case limit:
		debug.SetGCPercent(GCPercentWithLimit)
	default:
		debug.SetGCPercent(GCPercent)
	}
	if !limit {
		debug.SetMemoryLimit(MemoryLimit)
	}
}
