package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// recorder keeps every event it is shown; block, if set, holds the
// first Observe until it is closed.
type recorder struct {
	mu     sync.Mutex
	events []Event
	block  chan struct{}
	once   sync.Once
}

func (o *recorder) Observe(ev Event) {
	if o.block != nil {
		o.once.Do(func() { <-o.block })
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, ev)
}

func (o *recorder) kinds() map[EventKind]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[EventKind]int{}
	for _, ev := range o.events {
		out[ev.Kind]++
	}
	return out
}

func TestObserverSeesTheRun(t *testing.T) { synctest.Test(t, testObserverSeesTheRun) }

func testObserverSeesTheRun(t *testing.T) {
	g := newRig(t)
	o := &recorder{}
	cfg := g.config()
	cfg.Observer = o
	res, err := g.run(cfg)
	require.NoError(t, err)
	require.Equal(t, results.Passed, res.Outcome)
	synctest.Wait() // the queue drained
	kinds := o.kinds()
	assert.Equal(t, 1, kinds[EventRun])
	assert.Equal(t, 3, kinds[EventCase])
	assert.Equal(t, 3, kinds[EventCaseEnd])
	assert.Equal(t, 1, kinds[EventEnd])
	assert.Positive(t, kinds[EventStep])
	assert.Positive(t, kinds[EventSamples])
	assert.Zero(t, g.r.ObserverDropped())

	o.mu.Lock()
	defer o.mu.Unlock()
	assert.Equal(t, EventRun, o.events[0].Kind)
	assert.Len(t, o.events[0].Cases, 3)
	last := o.events[len(o.events)-1]
	assert.Equal(t, EventEnd, last.Kind)
	assert.Equal(t, string(results.Passed), last.Outcome)
	var steady *CaseView
	voltageMargins := 0
	for i, ev := range o.events {
		assert.Equal(t, int64(i+1), ev.Seq, "in order, none dropped")
		if ev.Kind == EventCase && ev.Case.ID == "sat.p1-ma.steady.voltage" {
			steady = ev.Case
		}
		for _, m := range ev.Margins {
			if m.Interlock == "p1-ma-voltage" && m.Quality == "good" {
				voltageMargins++
				assert.Positive(t, m.Margin, "a healthy run stays inside its interlock: %+v", m)
			}
		}
		if ev.Kind == EventCaseEnd {
			assert.Equal(t, "PASS", ev.Outcome, ev.Case.ID)
		}
	}
	require.NotNil(t, steady)
	assert.Equal(t, 1, steady.Index)
	assert.NotEmpty(t, steady.Steps)
	require.Len(t, steady.Envelopes, 1)
	env := steady.Envelopes[0]
	assert.Equal(t, "p1/ma/voltage", env.Channel)
	require.NotNil(t, env.Lo, "the check's band is there to draw")
	require.NotNil(t, env.Hi)
	assert.Less(t, *env.Lo, *env.Hi)
	assert.NotEmpty(t, steady.Interlocks)
	assert.Positive(t, voltageMargins)
}

// A viewer that stops reading never slows the run: its events are
// dropped and counted.
func TestSlowObserverNeverBlocksTheRun(t *testing.T) { synctest.Test(t, testSlowObserver) }

func testSlowObserver(t *testing.T) {
	g := newRig(t)
	o := &recorder{block: make(chan struct{})}
	r, err := New(g.config())
	require.NoError(t, err)
	r.obs = newObserveQueue(o, g.p, g.clk.Now(), 4)
	res, err := r.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, results.Passed, res.Outcome, "the run went on while its observer was stuck")
	assert.Positive(t, r.ObserverDropped())
	close(o.block)
	synctest.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.LessOrEqual(t, len(o.events), 5, "the one held and the four queued")
	assert.Equal(t, EventRun, o.events[0].Kind)
}

func TestMargin(t *testing.T) {
	lo, hi := 380.0, 440.0
	for _, tc := range []struct {
		name     string
		min, max *float64
		v, want  float64
	}{
		{"both, near the top", &lo, &hi, 430, 10},
		{"both, near the bottom", &lo, &hi, 385, 5},
		{"below the minimum", &lo, nil, 370, -10},
		{"maximum only", nil, &hi, 450, -10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := margin(planInterlock(tc.min, tc.max), sampleOf(tc.v))
			assert.InDelta(t, tc.want, m.Margin, 1e-9)
		})
	}
}

func planInterlock(lo, hi *float64) plan.Interlock {
	return plan.Interlock{ID: "il", Channel: "c", Min: lo, Max: hi, Unit: "V"}
}

func sampleOf(v float64) evidence.Sample {
	return evidence.Sample{Channel: "c", Value: v, Quality: "good"}
}

// The page may press a button after the run ended: nothing is sent
// then, and nothing breaks.
func TestObserverAfterTheEnd(t *testing.T) { synctest.Test(t, testObserverAfterTheEnd) }

func testObserverAfterTheEnd(t *testing.T) {
	g := newRig(t)
	o := &recorder{}
	cfg := g.config()
	cfg.Observer = o
	_, err := g.run(cfg)
	require.NoError(t, err)
	synctest.Wait()
	n := len(o.events)
	_ = g.r.Pause("Ana (the live view)")
	g.r.AbortBy("Ana", "the live view")
	synctest.Wait()
	assert.Len(t, o.events, n)
}

// An interlock trip reaches the observer at once, with the margin that
// went negative, before the run's end.
func TestObserverSeesAnInterlockTrip(t *testing.T) { synctest.Test(t, testObserverSeesATrip) }

func testObserverSeesATrip(t *testing.T) {
	g := newRig(t)
	g.w.droop = 0.07 // below 350 V above 928.6 kW
	o := &recorder{}
	cfg := g.config()
	cfg.Observer = o
	res, err := g.run(cfg)
	require.NoError(t, err)
	require.Equal(t, results.Aborted, res.Outcome)
	synctest.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	trip, end, negative := -1, -1, false
	for i, ev := range o.events {
		switch ev.Kind {
		case EventAbort:
			if trip < 0 && strings.Contains(ev.Text, "interlock p1-ma-voltage tripped") {
				trip = i
			}
		case EventEnd:
			end = i
			assert.Equal(t, string(results.Aborted), ev.Outcome)
			assert.Contains(t, ev.Text, "interlock")
		}
		for _, m := range ev.Margins {
			negative = negative || m.Interlock == "p1-ma-voltage" && m.Margin < 0
		}
	}
	require.GreaterOrEqual(t, trip, 0, "the trip is sent")
	assert.Less(t, trip, end, "before the end")
	assert.True(t, negative, "the margin went negative")
}
