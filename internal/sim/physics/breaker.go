package physics

import "math"

// Breaker is a thermal-magnetic circuit breaker. Its thermal element
// follows the IEC 60255-8 thermal model: a state θ, in units of
// (I/Rating)², relaxes towards (I/Rating)² with time constant Tau, and
// the breaker trips when θ reaches Pickup². From cold at a constant
// multiple m of the rating it trips after
//
//	t = Tau · ln(m² / (m² − Pickup²))
//
// Its magnetic element trips after Clearing seconds once the current
// reaches Instantaneous times the rating.
type Breaker struct {
	Rating        float64 // A
	Pickup        float64 // multiple of Rating at which the thermal element can trip, e.g. 1.13
	Tau           float64 // thermal time constant, s
	Instantaneous float64 // multiple of Rating for the magnetic element, e.g. 10
	Clearing      float64 // opening time of the magnetic element, s

	theta   float64
	magnet  float64 // time spent above the instantaneous threshold
	open    bool
	tripped string // "", "thermal", "instantaneous", "manual"
}

// Step carries amps for dt seconds and returns whether the breaker is
// open at the end of the step.
func (b *Breaker) Step(dt, amps float64) bool {
	if b.open {
		amps = 0
	}
	m := 0.0
	if b.Rating > 0 {
		m = math.Abs(amps) / b.Rating
	}
	target := m * m
	b.theta = target + (b.theta-target)*math.Exp(-dt/b.Tau)
	if b.open {
		return true
	}
	if b.Instantaneous > 0 && m >= b.Instantaneous {
		b.magnet += dt
		if b.magnet >= b.Clearing-1e-9 {
			b.trip("instantaneous")
			return true
		}
	} else {
		b.magnet = 0
	}
	if b.theta >= b.Pickup*b.Pickup {
		b.trip("thermal")
	}
	return b.open
}

func (b *Breaker) trip(why string) { b.open, b.tripped, b.magnet = true, why, 0 }

// Open opens the breaker by hand (a fault, or an operator's manual step).
func (b *Breaker) Open() { b.trip("manual") }

// Close recloses the breaker; its thermal state is kept, as a real
// thermal element keeps its heat.
func (b *Breaker) Close() { b.open, b.tripped = false, "" }

// IsOpen reports whether the breaker is open.
func (b *Breaker) IsOpen() bool { return b.open }

// Tripped says why the breaker opened: "thermal", "instantaneous",
// "manual", or "" while closed.
func (b *Breaker) Tripped() string { return b.tripped }

// TripTime is the closed-form trip time from cold at a constant current
// of m times the rating; +Inf when the breaker never trips.
func (b *Breaker) TripTime(m float64) float64 {
	if b.Instantaneous > 0 && m >= b.Instantaneous {
		return b.Clearing
	}
	if m <= b.Pickup {
		return math.Inf(1)
	}
	return b.Tau * math.Log(m*m/(m*m-b.Pickup*b.Pickup))
}
