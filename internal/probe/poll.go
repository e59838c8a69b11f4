package probe

import (
	"context"
	"time"

	"github.com/seamdc/seam/internal/clock"
)

// Sample is one scheduled read of one device.
type Sample struct {
	Device    string
	Scheduled time.Time // when the read was due
	Started   time.Time // when it was sent
	Done      time.Time // when its last reply arrived
	Readings  []Reading
	Err       error
	// Skipped counts the slots before this one that were dropped because
	// the previous read ran past them.
	Skipped int
}

// Poll reads each device every period, each on its own goroutine, until
// ctx is done. Device i's first slot is at start + i×period/len(devs),
// so that the devices do not all ask at once. A read that runs past its
// next slot makes that slot late, not queued: slots that are already a
// whole period past are skipped and counted. sink is called from the
// devices' goroutines.
func Poll(ctx context.Context, devs []Device, period time.Duration, clk clock.Clock, sink func(Sample)) {
	start := clk.Now()
	g := clock.NewGroup(clk)
	for i, d := range devs {
		offset := time.Duration(int64(period) * int64(i) / int64(len(devs)))
		g.Go(func() { pollOne(ctx, d, start.Add(offset), period, clk, sink) })
	}
	g.Wait()
}

func pollOne(ctx context.Context, d Device, next time.Time, period time.Duration, clk clock.Clock, sink func(Sample)) {
	skipped := 0
	for {
		if err := clk.Sleep(ctx, next.Sub(clk.Now())); err != nil {
			return
		}
		started := clk.Now()
		rs, err := d.Read(ctx)
		if ctx.Err() != nil {
			return
		}
		sink(Sample{Device: d.Name(), Scheduled: next, Started: started, Done: clk.Now(), Readings: rs, Err: err, Skipped: skipped})
		next, skipped = nextSlot(next, period, clk.Now())
	}
}

// nextSlot returns the slot after prev, or, when now is already more
// than a period past it, the latest slot not after now, with the number
// of slots skipped.
func nextSlot(prev time.Time, period time.Duration, now time.Time) (time.Time, int) {
	next := prev.Add(period)
	skipped := 0
	for !next.Add(period).After(now) {
		next = next.Add(period)
		skipped++
	}
	return next, skipped
}
