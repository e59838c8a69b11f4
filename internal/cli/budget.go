package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A CUE evaluation cannot be cancelled, and a runaway one (a doubling,
// a list.Range of a billion elements, a recursion) takes all the memory
// there is within seconds, and the Go runtime then dies with a fatal
// "out of memory" that names nothing. So the commands that evaluate CUE
// run under a watchdog: it samples the heap (runtime/metrics) and the
// clock, and when either goes over its budget it prints what was being
// evaluated and exits with the tool-failure code.

// Budget bounds a CUE evaluation: the heap it may use and how long it
// may take. Zero means no bound.
type Budget struct {
	Memory uint64
	Time   time.Duration
}

// Defaults, overridden by the environment.
const (
	DefaultMemory = 4 << 30
	DefaultTime   = 2 * time.Minute
	// EnvMemory and EnvTime override the budget: "8GiB", "512MiB",
	// "90s"; "0" lifts the bound.
	EnvMemory = "SEAM_CUE_MEMORY"
	EnvTime   = "SEAM_CUE_TIME"
)

// BudgetFromEnv is the default budget, with EnvMemory and EnvTime
// applied.
func BudgetFromEnv(lookup func(string) (string, bool)) (Budget, error) {
	b := Budget{Memory: DefaultMemory, Time: DefaultTime}
	if v, ok := lookup(EnvMemory); ok && v != "" {
		m, err := ParseBytes(v)
		if err != nil {
			return b, fmt.Errorf("%s=%q: %w", EnvMemory, v, err)
		}
		b.Memory = m
	}
	if v, ok := lookup(EnvTime); ok && v != "" {
		if v == "0" {
			b.Time = 0
		} else {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return b, fmt.Errorf("%s=%q: want a duration such as 90s", EnvTime, v)
			}
			b.Time = d
		}
	}
	return b, nil
}

// ParseBytes reads "4GiB", "512MiB", "100MB", "1000000".
func ParseBytes(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	mult := float64(1)
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("want a size such as 4GiB or 512MiB")
	}
	return uint64(v * mult), nil
}

// watchdog is the process's one CUE watchdog: evaluations nest (a
// binding names contracts), and the outermost names what is evaluated.
var watchdog struct {
	sync.Mutex
	depth int
	what  string
	stop  chan struct{}
}

// exit is os.Exit, replaced by tests.
var exit = os.Exit

// Guard starts the watchdog for the evaluation of what ("the CUE in
// contracts/examples/threemodule"), bounded by b; stop ends it. While it
// runs, the heap is sampled every 20 ms; over b.Memory, or b.Time after
// the start, it writes to w
//
//	PROG: evaluating the CUE in DIR used more than 4 GiB of memory after 2.1 s: …
//
// and exits with ExitTool. A Go heap limit (debug.SetMemoryLimit) at the
// budget, unless one is lower already, makes the collector work harder
// before the watchdog gives up.
func Guard(w io.Writer, prog, what string, b Budget) (stop func()) {
	if b.Memory == 0 && b.Time == 0 {
		return func() {}
	}
	watchdog.Lock()
	defer watchdog.Unlock()
	watchdog.depth++
	if watchdog.depth > 1 {
		return release
	}
	watchdog.what = what
	done := make(chan struct{})
	watchdog.stop = done
	old := int64(-1)
	if limit := int64(min(b.Memory, math.MaxInt64)); b.Memory > 0 && limit < debug.SetMemoryLimit(-1) {
		old = debug.SetMemoryLimit(limit) // only ever lowered (TuneGC's may be lower)
	}
	go watch(w, prog, what, b, done, old)
	return release
}

func release() {
	watchdog.Lock()
	defer watchdog.Unlock()
	watchdog.depth--
	if watchdog.depth == 0 && watchdog.stop != nil {
		close(watchdog.stop)
		watchdog.stop = nil
	}
}

func watch(w io.Writer, prog, what string, b Budget, done chan struct{}, oldLimit int64) {
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	for {
		select {
		case <-done:
			if oldLimit >= 0 {
				debug.SetMemoryLimit(oldLimit)
			}
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		heap := sample[0].Value.Uint64() + sample[1].Value.Uint64()
		took := time.Since(start)
		switch {
		case b.Memory > 0 && heap > b.Memory:
			fmt.Fprintf(w, "%s: evaluating %s used more than %s of memory after %s: a runaway evaluation (a doubling, a huge list.Range, a recursion?) or a site larger than the budget; "+
				"fix the CUE, or raise the budget with %s=8GiB\n", prog, what, sizeText(b.Memory), took.Round(100*time.Millisecond), EnvMemory)
			exit(ExitTool)
			return
		case b.Time > 0 && took > b.Time:
			fmt.Fprintf(w, "%s: evaluating %s took longer than %s: a runaway evaluation, or a site larger than the budget; fix the CUE, or raise the budget with %s=10m\n",
				prog, what, b.Time, EnvTime)
			exit(ExitTool)
			return
		}
	}
}

func sizeText(n uint64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'g', 3, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'g', 3, 64) + " MiB"
	}
	return strconv.FormatUint(n, 10) + " B"
}
