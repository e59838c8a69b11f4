package physics

import "math"

// Feed is one feed of a power block: a regulated source, an optional UPS
// behind it, and the feed breaker towards the racks.
type Feed struct {
	ID      string // e.g. "p1/block/a"
	Voltage Regulator
	UPS     *UPS // nil: no UPS
	Breaker Breaker

	SourceLost bool // the UPS input (utility or generator) is gone
	OutputLost bool // the feed is lost downstream of the UPS
	// Sag is how far the input's voltage is below nominal, per unit (0:
	// at nominal; 0.5: a dip to 0.5 pu), and InputHz its frequency (0:
	// not known). A UPS rides a sag as its settings say (UPS.Transfer);
	// a feed without a UPS passes it on to the racks.
	Sag     float64
	InputHz float64

	live      bool
	onBattery bool
	loadKW    float64
	amps      float64
}

// Live reports whether the feed delivers power to the racks.
func (f *Feed) Live() bool { return f.live }

// OnBattery reports whether the feed's UPS carries it from its battery.
func (f *Feed) OnBattery() bool { return f.onBattery }

// LoadKW is the power the feed carries.
func (f *Feed) LoadKW() float64 { return f.loadKW }

// Amps is the feed's line current.
func (f *Feed) Amps() float64 { return f.amps }

// Volts is the feed's line-line voltage at the racks; 0 when lost.
func (f *Feed) Volts() float64 {
	if !f.live {
		return 0
	}
	if f.UPS == nil {
		return f.Voltage.Value() * math.Max(0, 1-f.Sag)
	}
	return f.Voltage.Value()
}

// GridKW is the power the feed drew from its input in the last step:
// its UPS's input (the load it passed on, and its recharge), or the load
// of a feed without a UPS.
func (f *Feed) GridKW() float64 {
	if f.UPS != nil {
		return f.UPS.InputKW()
	}
	return f.loadKW
}

// input is the feed's input as its UPS sees it.
func (f *Feed) input() Input {
	return Input{Lost: f.SourceLost, PU: 1 - f.Sag, Hz: f.InputHz}
}

// available says whether the feed can carry load in the coming step.
func (f *Feed) available() bool {
	if f.OutputLost || f.Breaker.IsOpen() {
		return false
	}
	if f.UPS == nil {
		return !f.SourceLost
	}
	if !f.SourceLost && !f.UPS.Transferred() && f.Sag <= 0 {
		return true
	}
	return f.UPS.Charge() > 0
}

// Block is a power block with feeds that share the load of dual-corded
// racks: the load splits evenly over the live feeds, so losing one feed
// transfers its share to the others at once.
type Block struct {
	ID          string  // e.g. "p1/block"
	Rating      float64 // kW, per feed (2N: each feed carries the block)
	PowerFactor float64
	Frequency   Regulator
	Feeds       []*Feed
	FeedLost    Delay // alarm: a feed is lost
	OnBattery   Delay // alarm: a UPS is on battery

	served float64
	init   bool
}

// Step carries demandKW for dt seconds and returns the power served
// (0 when every feed is lost: the racks lose power).
func (b *Block) Step(dt, demandKW float64) float64 {
	var live []*Feed
	for _, f := range b.Feeds {
		if f.available() {
			live = append(live, f)
		}
	}
	share := 0.0
	if len(live) > 0 {
		share = demandKW / float64(len(live))
	}
	lost, battery := false, false
	for _, f := range b.Feeds {
		b.stepFeed(f, dt, share, f.available())
		lost = lost || !f.live
		battery = battery || f.onBattery
	}
	b.served = b.pickUp(demandKW)
	b.Frequency.Step(dt, b.served/b.Rating)
	b.FeedLost.Step(dt, lost)
	b.OnBattery.Step(dt, battery)
	b.init = true
	return b.served
}

func (b *Block) stepFeed(f *Feed, dt, share float64, avail bool) {
	wasLive := f.live || !b.init
	if !avail {
		share = 0
	}
	up := avail
	if avail && f.UPS != nil {
		up = f.UPS.StepInput(dt, share, f.input())
	} else if f.UPS != nil {
		f.UPS.StepInput(dt, 0, f.input())
	}
	f.onBattery = up && f.UPS != nil && (f.SourceLost || f.UPS.Transferred())
	if !up {
		share = 0
	}
	if up && !wasLive {
		f.Voltage.Reset(0)
	}
	f.Voltage.Step(dt, share/b.Rating)
	f.amps = 0
	if up && share > 0 {
		f.amps = share * 1000 / (math.Sqrt(3) * f.Voltage.Value() * b.PowerFactor)
	}
	open := f.Breaker.Step(dt, f.amps)
	f.live = up && !open && !f.OutputLost
	f.loadKW = 0
	if f.live {
		f.loadKW = share
	}
}

// pickUp moves the load of a feed that died during the step onto the
// feeds still live, as dual-corded power supplies do within their
// hold-up time, and returns the power served.
func (b *Block) pickUp(demandKW float64) float64 {
	var live []*Feed
	for _, f := range b.Feeds {
		if f.live {
			live = append(live, f)
		}
	}
	if len(live) == 0 {
		return 0
	}
	for _, f := range live {
		f.loadKW = demandKW / float64(len(live))
		f.amps = f.loadKW * 1000 / (math.Sqrt(3) * f.Voltage.Value() * b.PowerFactor)
	}
	return demandKW
}

// Served is the power delivered to the racks in the last step.
func (b *Block) Served() float64 { return b.served }

// Hz is the block's frequency; 0 when no feed is live.
func (b *Block) Hz() float64 {
	for _, f := range b.Feeds {
		if f.live {
			return b.Frequency.Value()
		}
	}
	return 0
}

// Feed returns the feed whose ID ends in "/"+name or equals name.
func (b *Block) Feed(name string) *Feed {
	for _, f := range b.Feeds {
		if f.ID == name || f.ID == b.ID+"/"+name {
			return f
		}
	}
	return nil
}
