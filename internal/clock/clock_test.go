package clock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFakeFiresInOrderOnlyWhenDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	a, b := f.After(2*time.Second), f.After(time.Second)
	f.Advance(999 * time.Millisecond)
	require.Len(t, b, 0)
	f.Advance(time.Millisecond)
	require.Equal(t, start.Add(time.Second), <-b)
	require.Len(t, a, 0)
	f.Advance(time.Second)
	require.Equal(t, start.Add(2*time.Second), <-a)
	require.Equal(t, 0, f.Waiters())
}

func TestFakeSleepHonoursContext(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, f.Sleep(ctx, time.Hour), context.Canceled)
}
