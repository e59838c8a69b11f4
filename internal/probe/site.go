package probe

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
)

// Site is every device of a binding, opened.
type Site struct {
	Binding *binding.Binding
	Devices []Device // in the binding's order
	byName  map[string]Device
	clk     clock.Clock
}

// OpenSite opens every device of a loaded, checked binding.
func OpenSite(b *binding.Binding, opts Options) (*Site, error) {
	opts = opts.withDefaults()
	s := &Site{Binding: b, byName: map[string]Device{}, clk: opts.Clock}
	for _, dev := range b.Devices {
		d, err := Open(dev, opts)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.Devices = append(s.Devices, d)
		s.byName[dev.Name] = d
	}
	return s, nil
}

// Device returns the opened device called name, or nil.
func (s *Site) Device(name string) Device { return s.byName[name] }

// Close closes every device.
func (s *Site) Close() error {
	var errs []error
	for _, d := range s.Devices {
		errs = append(errs, d.Close())
	}
	return errors.Join(errs...)
}

// ChannelReading is the reading of a bound channel, or of a load bank's
// role ("lb-ma/applied").
type ChannelReading struct {
	Name     string // the channel, or load bank/role
	LoadBank bool
	Optional bool
	Reading
}

// ReadAll reads every device once, all devices at once (one goroutine
// each), and returns one reading per bound channel and load bank role,
// channels first, each group sorted by name.
func (s *Site) ReadAll(ctx context.Context) ([]ChannelReading, error) {
	readings := make(map[string]map[string]Reading, len(s.Devices))
	var mu sync.Mutex
	g := clock.NewGroup(s.clk)
	for _, d := range s.Devices {
		g.Go(func() {
			rs, _ := d.Read(ctx)
			byPoint := make(map[string]Reading, len(rs))
			for _, r := range rs {
				byPoint[r.Point] = r
			}
			mu.Lock()
			readings[d.Name()] = byPoint
			mu.Unlock()
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.collect(readings), nil
}

func (s *Site) collect(readings map[string]map[string]Reading) []ChannelReading {
	var out []ChannelReading
	pick := func(device, point string) Reading {
		r, ok := readings[device][point]
		if !ok {
			return Reading{Device: device, Point: point, Quality: Bad, Err: fmt.Errorf("device %s returned no reading of %s", device, point)}
		}
		return r
	}
	for _, ch := range s.Binding.Channels {
		out = append(out, ChannelReading{Name: ch.Name, Optional: ch.Optional, Reading: pick(ch.DeviceName, ch.PointName)})
	}
	var lbs []ChannelReading
	for _, lb := range s.Binding.LoadBanks {
		for _, role := range binding.Roles {
			lbs = append(lbs, ChannelReading{Name: lb.Name + "/" + role, LoadBank: true, Reading: pick(lb.DeviceName, lb.Roles[role])})
		}
	}
	sort.SliceStable(lbs, func(i, j int) bool { return lbs[i].Name < lbs[j].Name })
	return append(out, lbs...)
}
