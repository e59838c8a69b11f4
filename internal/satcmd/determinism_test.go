package satcmd

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// The determinism claim: one plan run twice against the simulated site
// in process, once plain and once while other goroutines burn every
// core, gives the same verdicts and the same measured values, and
// samples.csv the same samples in the same order at the same site times
// (counted from the start of the run). The IST plan injects faults and
// waits for alarms; the defect makes checks fail with measured values.
func TestSimulatedRunsAreDeterministic(t *testing.T) {
	for _, tt := range []struct{ level, defect string }{{plan.IST, ""}, {plan.SAT, "p1-slow-recovery"}} {
		t.Run(tt.level+"/"+tt.defect, func(t *testing.T) {
			p := examplePlan(t, tt.level)
			var extra []string
			if tt.defect != "" {
				extra = []string{"--defect", tt.defect}
			}
			plain := runOnce(t, p, extra)
			stop := burn(runtime.NumCPU())
			busy := runOnce(t, p, extra)
			stop()
			require.Greater(t, len(plain.samples), 1000)
			assert.Equal(t, plain.verdicts, busy.verdicts, "verdicts and measured values")
			if !assert.Equal(t, len(plain.samples), len(busy.samples), "samples") {
				return
			}
			for i := range plain.samples {
				if !assert.Equal(t, plain.samples[i], busy.samples[i], "sample %d", i) {
					return
				}
			}
		})
	}
}

type runOutcome struct {
	verdicts []string
	samples  []string // channel, seconds since the run started, value, quality
}

func runOnce(t *testing.T, planPath string, extra []string) runOutcome {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ev")
	_, res, _ := simRun(t, planPath, out, extra...)
	var o runOutcome
	o.verdicts = verdicts(res)
	f, err := os.Open(filepath.Join(out, evidence.SamplesFile))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		parts := strings.Split(sc.Text(), ",")
		require.Len(t, parts, 4)
		at, err := time.Parse(time.RFC3339Nano, parts[1])
		require.NoError(t, err)
		o.samples = append(o.samples, fmt.Sprintf("%s %.6f %s %s", parts[0], at.Sub(res.Run.Started).Seconds(), parts[2], parts[3]))
	}
	require.NoError(t, sc.Err())
	return o
}

// verdicts is every case's outcome and reason and every check's
// verdict, measured value, limit, margin, sample count and detail.
func verdicts(res *results.Results) []string {
	num := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.9g", *p)
	}
	var out []string
	for _, c := range res.Cases {
		out = append(out, fmt.Sprintf("%s %s %q", c.ID, c.Outcome, c.Reason))
		for _, k := range c.Checks {
			out = append(out, fmt.Sprintf("  %s %s measured=%s limit=%s margin=%s samples=%d %q", k.Check, k.Outcome,
				num(k.Measured), num(k.Limit), num(k.Margin), k.Samples, k.Detail))
		}
	}
	return out
}

// burn keeps n goroutines busy, each burning the CPU for a millisecond
// at a time with short random rests, until the returned func is called:
// every goroutine of the run is then scheduled late, by varying amounts.
// (Goroutines that never rest would starve the network poller of the
// in-process devices and make the run take minutes; a busy machine,
// other processes, is the job of ../shared/tools/under-load.)
func burn(n int) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			x := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				for t0 := time.Now(); time.Since(t0) < time.Millisecond; {
					for i := range 1000 {
						x += i * i
					}
				}
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
			}
		})
	}
	return func() { close(done); wg.Wait() }
}
