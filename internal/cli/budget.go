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

// Defaults, overridden by the environment. DefaultMemory and
// DefaultTime bound a whole command (sat's, facilityd's); a contract
// evaluation (GuardEval: every contractc command, and every
// contract.Load) is bounded tighter, by DefaultEvalMemory and
// DefaultEvalTime: the worked example evaluates in under a second and
// 80 MB, the generated 100-module site's compile peaks at 632 MB, and a
// bomb under the whole-command budget ran past 45 s (the collector
// holding the heap near its 2 GiB soft limit, below the 4 GiB budget)
// before anything stopped it.
const (
	DefaultMemory     = 4 << 30
	DefaultTime       = 2 * time.Minute
	DefaultEvalMemory = 1 << 30
	DefaultEvalTime   = 30 * time.Second
	// EnvMemory and EnvTime override the budget: "8GiB", "512MiB",
	// "90s"; "0" lifts the bound.
	EnvMemory = "SEAM_CUE_MEMORY"
	EnvTime   = "SEAM_CUE_TIME"
)

// BudgetFromEnv is the default budget, with EnvMemory and EnvTime
// applied.
func BudgetFromEnv(lookup func(string) (string, bool)) (Budget, error) {
	return budgetFromEnv(Budget{Memory: DefaultMemory, Time: DefaultTime}, lookup)
}

// EvalBudgetFromEnv is the budget of one contract evaluation
// (DefaultEvalMemory, DefaultEvalTime), with EnvMemory and EnvTime
// applied.
func EvalBudgetFromEnv(lookup func(string) (string, bool)) (Budget, error) {
	return budgetFromEnv(Budget{Memory: DefaultEvalMemory, Time: DefaultEvalTime}, lookup)
}

func budgetFromEnv(b Budget, lookup func(string) (string, bool)) (Budget, error) {
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
// binding names contracts, a contract directory loads through cueload),
// and the innermost names what is evaluated.
var watchdog struct {
	sync.Mutex
	depth int
	what  string
	stop  chan struct{}
	armed *armed // the budget GuardEval applies (Arm)
}

type armed struct {
	w    io.Writer
	prog string
	b    Budget
}

// exit is os.Exit, replaced by tests.
var exit = os.Exit

// Guard starts the watchdog for the evaluation of what ("the CUE in
// contracts/examples/threemodule"), bounded by b; stop ends it. While it
// runs, the heap is sampled every 20 ms; over b.Memory, or b.Time after
// the start, it writes to w
//
//	PROG: evaluating WHAT used more than 1 GiB of memory after 2.1s: …, or raise the budget with SEAM_CUE_MEMORY=2GiB
//
// and exits with ExitTool. A Go heap limit (debug.SetMemoryLimit) at the
// budget, unless one is lower already, makes the collector work harder
// before the watchdog gives up. Inside another Guard it only names what
// is evaluated, until stop.
func Guard(w io.Writer, prog, what string, b Budget) (stop func()) {
	if b.Memory == 0 && b.Time == 0 {
		return func() {}
	}
	watchdog.Lock()
	defer watchdog.Unlock()
	return guard(w, prog, what, b)
}

// guard is Guard with the lock held.
func guard(w io.Writer, prog, what string, b Budget) (stop func()) {
	watchdog.depth++
	if watchdog.depth > 1 {
		// An inner evaluation names what is evaluated more closely
		// (the package and its files, not only a directory).
		outer := watchdog.what
		watchdog.what = what
		return func() {
			watchdog.Lock()
			watchdog.what = outer
			watchdog.Unlock()
			release()
		}
	}
	watchdog.what = what
	done := make(chan struct{})
	watchdog.stop = done
	old := int64(-1)
	if limit := int64(min(b.Memory, math.MaxInt64)); b.Memory > 0 && limit < debug.SetMemoryLimit(-1) {
		old = debug.SetMemoryLimit(limit) // only ever lowered (TuneGC's may be lower)
	}
	go watch(w, prog, b, done, old)
	return release
}

// Arm sets the budget that GuardEval applies from now on, with prog
// ("contractc vet") and w for the message; disarm undoes it. contractc
// arms the budget instead of guarding whole commands: its servers and
// its Slurm and Kubernetes clients run for long after the evaluation.
func Arm(w io.Writer, prog string, b Budget) (disarm func()) {
	watchdog.Lock()
	defer watchdog.Unlock()
	old := watchdog.armed
	watchdog.armed = &armed{w, prog, b}
	return func() {
		watchdog.Lock()
		watchdog.armed = old
		watchdog.Unlock()
	}
}

// GuardEval bounds one evaluation of what ("package site in DIR
// (site.cue, …)") by the armed budget (Arm); inside a Guard it only
// names what is evaluated; with nothing armed and no Guard it does
// nothing. contract.Load and cueload.Load call it, so every command
// that loads contracts, bindings or profiles is bounded and its message
// names the package and files.
func GuardEval(what string) (stop func()) {
	watchdog.Lock()
	defer watchdog.Unlock()
	switch a := watchdog.armed; {
	case watchdog.depth > 0:
		return guard(nil, "", what, Budget{})
	case a != nil && (a.b.Memory > 0 || a.b.Time > 0):
		return guard(a.w, a.prog, what, a.b)
	}
	return func() {}
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

func watch(w io.Writer, prog string, b Budget, done chan struct{}, oldLimit int64) {
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
		var over string
		switch {
		case b.Memory > 0 && heap > b.Memory:
			over = fmt.Sprintf("used more than %s of memory after %s: a runaway evaluation (a doubling, a huge list.Range, a recursion?) or a site larger than the budget; "+
				"fix the CUE, or raise the budget with %s=%s", sizeText(b.Memory), took.Round(100*time.Millisecond), EnvMemory, envSize(2*b.Memory))
		case b.Time > 0 && took > b.Time:
			over = fmt.Sprintf("took longer than %s: a runaway evaluation (a comprehension over a huge range, a recursion?) or a site larger than the budget; "+
				"fix the CUE, or raise the budget with %s=%s", b.Time, EnvTime, 2*b.Time)
		default:
			continue
		}
		// Lift the soft limit first: at it, the collector makes every
		// allocation (this message's too) assist it.
		debug.SetMemoryLimit(math.MaxInt64)
		watchdog.Lock()
		what := watchdog.what
		watchdog.Unlock()
		fmt.Fprintf(w, "%s: evaluating %s %s\n", prog, what, over)
		exit(ExitTool)
		return
	}
}

// envSize writes n as EnvMemory reads it: "2GiB", "768MiB".
func envSize(n uint64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return strconv.FormatUint(n>>30, 10) + "GiB"
	}
	return strconv.FormatUint((n+1<<20-1)>>20, 10) + "MiB"
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
