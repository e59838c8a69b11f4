package probe

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/profile"
)

// fakeDevice answers at once, on the clock's time.
type fakeDevice struct{ name string }

func (f *fakeDevice) Name() string              { return f.name }
func (f *fakeDevice) Profile() *profile.Profile { return nil }
func (f *fakeDevice) Read(context.Context) ([]Reading, error) {
	return []Reading{{Device: f.name, Point: "p"}}, nil
}
func (f *fakeDevice) Write(context.Context, string, float64) error { return nil }
func (f *fakeDevice) Requests() int64                              { return 0 }
func (f *fakeDevice) Close() error                                 { return nil }

func TestPollSchedule(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	got := map[string][]time.Duration{}
	done := make(chan struct{})
	go func() {
		Poll(ctx, []Device{&fakeDevice{"a"}, &fakeDevice{"b"}}, time.Second, clk, func(s Sample) {
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, s.Scheduled, s.Started, "on a fake clock a read starts exactly on schedule")
			got[s.Device] = append(got[s.Device], s.Scheduled.Sub(t0))
		})
		close(done)
	}()
	for step := 0; step < 30; step++ {
		require.Eventually(t, func() bool { return clk.Waiters() == 2 }, 5*time.Second, time.Millisecond)
		clk.Advance(100 * time.Millisecond)
	}
	require.Eventually(t, func() bool { return clk.Waiters() == 2 }, 5*time.Second, time.Millisecond)
	cancel()
	<-done
	s := time.Second
	assert.Equal(t, []time.Duration{0, s, 2 * s, 3 * s}, got["a"])
	assert.Equal(t, []time.Duration{s / 2, 3 * s / 2, 5 * s / 2}, got["b"], "the second device is offset by half a period")
}

func TestNextSlot(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	tests := []struct {
		name    string
		now     time.Duration
		want    time.Duration
		skipped int
	}{
		{"read done in time", 20 * ms, 1000 * ms, 0},
		{"read ran past the next slot: that slot is late, not skipped", 1300 * ms, 1000 * ms, 0},
		{"read ran a whole period past it: skipped", 2500 * ms, 2000 * ms, 1},
		{"exactly on the slot after", 2000 * ms, 2000 * ms, 1},
		{"five periods lost", 6100 * ms, 6000 * ms, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, skipped := nextSlot(t0, time.Second, t0.Add(tt.now))
			assert.Equal(t, tt.want, next.Sub(t0))
			assert.Equal(t, tt.skipped, skipped)
		})
	}
}
