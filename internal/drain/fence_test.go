package drain_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/scheduler/schedtest"
)

// fencingStore is a shared store that refuses saves from the nth on,
// as a state another replica has claimed would.
type fencingStore struct {
	mu    sync.Mutex
	saves int
	from  int
	err   error
}

func (s *fencingStore) Save(*drain.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves++
	if s.saves >= s.from {
		return s.err
	}
	return nil
}

// TestFencedControllerWritesNothing: once a save is refused as fenced,
// the controller touches the scheduler no more, and says so once; a
// save failing for another reason (a full disk) holds no drain back.
func TestFencedControllerWritesNothing(t *testing.T) {
	ix := exampleIndex(t)
	l2 := alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"}
	for name, tc := range map[string]struct {
		err        error
		wantDrains int
		fenced     bool
	}{
		"fenced":     {fmt.Errorf("configmap changed: %w", drain.ErrFenced), 0, true},
		"disk full":  {errors.New("no space left on device"), 288, false},
		"no failure": {nil, 288, false},
	} {
		t.Run(name, func(t *testing.T) {
			f := schedtest.New(ix.Nodes(alarm.Domain{Kind: alarm.Site, Value: ix.Site()}))
			store := &fencingStore{from: 1, err: tc.err}
			var calls int
			stream := alarm.NewStream()
			ctl := drain.New(drain.Config{}, drain.Deps{Index: ix, Scheduler: f, Stream: stream, StateStore: store, Clock: clock.NewFake(t0),
				Fenced: func(error) { calls++ }})
			ev := stream.Observe(alarm.Observation{Type: alarm.CoolingRedundancyLost, Domain: l2, Active: true, Kind: alarm.FromDevice, Source: "t", At: t0})
			ctl.Handle(context.Background(), ev)
			ctl.Reconcile(context.Background())
			require.Equal(t, tc.wantDrains, f.DrainedCount())
			if tc.fenced {
				require.ErrorIs(t, ctl.Fenced(), drain.ErrFenced)
				require.Equal(t, 1, calls)
				require.Equal(t, 1, store.saves, "nothing is saved after the fence either")
			} else {
				require.NoError(t, ctl.Fenced())
				require.Zero(t, calls)
			}
		})
	}
}

// A controller without a store keeps its state in memory: it drains and
// saves nothing (facilityd's benchmarks and a library user run so).
func TestNoStoreKeepsStateInMemory(t *testing.T) {
	ix := exampleIndex(t)
	l2 := alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"}
	f := schedtest.New(ix.Nodes(alarm.Domain{Kind: alarm.Site, Value: ix.Site()}))
	stream := alarm.NewStream()
	ctl := drain.New(drain.Config{}, drain.Deps{Index: ix, Scheduler: f, Stream: stream, Clock: clock.NewFake(t0)})
	ev := stream.Observe(alarm.Observation{Type: alarm.CoolingRedundancyLost, Domain: l2, Active: true, Kind: alarm.FromDevice, Source: "t", At: t0})
	ctl.Handle(context.Background(), ev)
	require.Equal(t, 288, f.DrainedCount())
	require.NoError(t, ctl.Fenced())
}
