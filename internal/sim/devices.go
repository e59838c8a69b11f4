package sim

import (
	"time"
)

// Device is a simulated device that the site refreshes at its update
// period, in sim time. Refresh is called with the site's lock held, so
// it may read its element's signals.
type Device interface {
	ID() string
	Period() time.Duration
	Refresh(now time.Time)
}

type deviceEntry struct {
	dev    Device
	period float64
	next   float64
}

// AddDevice registers a device for refreshing. Devices of one period are
// spread over it, as real devices are not synchronised; each refreshes
// once at once so that it never serves an empty image.
func (s *Site) AddDevice(d Device) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := d.Period().Seconds()
	if p < s.dt {
		p = s.dt
	}
	steps := int(p/s.dt + 0.5)
	offset := float64(len(s.devEntries)%steps) * s.dt
	d.Refresh(s.epoch.Add(s.simTime()))
	s.devEntries = append(s.devEntries, &deviceEntry{dev: d, period: p, next: s.t + offset + p})
	s.devices = append(s.devices, d)
}

func (s *Site) refreshDevices() {
	now := s.epoch.Add(s.simTime())
	for _, e := range s.devEntries {
		if s.t+1e-9 < e.next {
			continue
		}
		e.dev.Refresh(now)
		e.next += e.period
		if e.next <= s.t {
			e.next = s.t + e.period
		}
	}
}

// Locked runs f with the site's lock held: device servers use it to
// apply a remote write to an element.
func (s *Site) Locked(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}
