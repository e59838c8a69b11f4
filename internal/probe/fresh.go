package probe

import (
	"fmt"
	"math"
	"time"

	"github.com/seamdc/seam/internal/profile"
)

// freshness tells stale readings from fresh ones. A marker is a raw
// value that must change at every update of the device: a point's
// device timestamp, or the profile's freshness counter. A marker that
// has not changed for StaleAfter (on our clock, so that the device's
// clock may be wrong) makes the readings it covers stale.
type freshness struct {
	staleAfter time.Duration
	markers    map[string]*marker // by marker point name
}

type marker struct {
	value   float64
	changed time.Time // when we first saw value
}

func newFreshness(p *profile.Profile) *freshness {
	return &freshness{staleAfter: p.StaleAfter, markers: map[string]*marker{}}
}

// observe records a marker's value at now and returns how long it has
// kept that value.
func (f *freshness) observe(name string, raw float64, now time.Time) time.Duration {
	m, ok := f.markers[name]
	if !ok || m.value != raw {
		f.markers[name] = &marker{value: raw, changed: now}
		return 0
	}
	return now.Sub(m.changed)
}

// apply marks the good readings stale whose marker has not changed for
// StaleAfter, and sets DeviceTime from timestamp points. byName indexes
// rs.
func (f *freshness) apply(p *profile.Profile, rs []Reading, byName map[string]int, now time.Time) {
	ages := map[string]time.Duration{}
	marker := func(name string) (time.Duration, bool) {
		if age, ok := ages[name]; ok {
			return age, true
		}
		i, ok := byName[name]
		if !ok || rs[i].Quality == Bad {
			return 0, false
		}
		age := f.observe(name, rs[i].Raw, now)
		ages[name] = age
		return age, true
	}
	var deviceAge time.Duration
	if p.Freshness != "" {
		deviceAge, _ = marker(p.Freshness)
	}
	for i := range rs {
		r := &rs[i]
		if r.Quality != Good {
			continue
		}
		pt := p.Point(r.Point)
		age := deviceAge
		if pt.Timestamp != "" {
			if a, ok := marker(pt.Timestamp); ok {
				age = max(age, a)
				r.DeviceTime = unixTime(rs[byName[pt.Timestamp]].Raw)
			}
		}
		if age >= f.staleAfter && f.staleAfter > 0 {
			r.Quality = Stale
			r.Err = fmt.Errorf("not refreshed for %s (the device updates every %s)", age.Round(time.Millisecond), p.UpdatePeriod)
		}
	}
}

func unixTime(raw float64) time.Time {
	sec, frac := math.Modf(raw)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}
