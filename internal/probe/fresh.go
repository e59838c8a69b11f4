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
// StaleAfter, and sets DeviceTime from timestamp points. stamps holds
// each reading's timestamp index (-1: none), fresh the index of the
// profile's freshness point (-1: none).
func (f *freshness) apply(p *profile.Profile, rs []Reading, stamps []int, fresh int, now time.Time) {
	ages := map[int]time.Duration{}
	marker := func(i int) (time.Duration, bool) {
		if age, ok := ages[i]; ok {
			return age, true
		}
		if rs[i].Quality == Bad {
			return 0, false
		}
		age := f.observe(rs[i].Point, rs[i].Raw, now)
		ages[i] = age
		return age, true
	}
	var deviceAge time.Duration
	if fresh >= 0 {
		deviceAge, _ = marker(fresh)
	}
	staleErrs := map[time.Duration]error{} // one error per age, shared by the readings it covers
	for i := range rs {
		r := &rs[i]
		if r.Quality != Good {
			continue
		}
		age := deviceAge
		if j := stamps[i]; j >= 0 {
			if a, ok := marker(j); ok {
				age = max(age, a)
				r.DeviceTime = unixTime(rs[j].Raw)
			}
		}
		if age >= f.staleAfter && f.staleAfter > 0 {
			if staleErrs[age] == nil {
				staleErrs[age] = fmt.Errorf("not refreshed for %s (the device updates every %s)", age.Round(time.Millisecond), p.UpdatePeriod)
			}
			r.Quality, r.Err = Stale, staleErrs[age]
		}
	}
}

func unixTime(raw float64) time.Time {
	sec, frac := math.Modf(raw)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}
