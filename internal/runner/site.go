package runner

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/loadbank"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
)

// Site kinds, as results.json names them.
const (
	Simulated = "simulated"
	Bound     = "binding"
)

// Site is what the runner drives: the binding's devices, opened, and the
// plan's load banks on them.
type Site struct {
	Kind    string // Simulated or Bound
	Binding *binding.Binding
	Devices map[string]probe.Device   // opened, by device name
	Banks   map[string]*loadbank.Bank // by the plan's load bank id
	// Faults performs fault steps and manual steps that name an event;
	// nil on a real site, where an operator performs them.
	Faults Faults
	// Grid runs train, stop_training and grid_dip steps; nil on a real
	// site, where an operator performs them.
	Grid Grid
	// BindingText is the binding without secrets (they are references),
	// copied into the bundle; BindingDigest is its digest.
	BindingText   []byte
	BindingDigest string
	Defect        string
	// TimeScale is site seconds per wall second (1 on a real site); for
	// a site in Lockstep with the run, the most it may be (0: no limit).
	TimeScale float64
	// Lockstep is set when the site's time moves with the run's
	// (clock.Lockstep): a device's reply takes no site time.
	Lockstep bool
}

// wallScale is how many site seconds pass while the run waits one wall
// second for a device: none in lockstep, where waits on devices take no
// site time (counted as one, a wait of its own length).
func (s *Site) wallScale() float64 {
	if s.Lockstep {
		return 1
	}
	return max(s.TimeScale, 1)
}

// Faults injects and clears faults: the simulator's control interface.
type Faults interface {
	Inject(ctx context.Context, kind, target string) error
	Clear(ctx context.Context, kind, target string) error
}

// NewSite opens the plan's load banks on the devices of a binding,
// opened. Every load bank the plan drives must be bound.
func NewSite(p *plan.Plan, b *binding.Binding, devs map[string]probe.Device, clk clock.Clock, log *slog.Logger) (*Site, error) {
	s := &Site{Kind: Bound, Binding: b, Devices: devs, Banks: map[string]*loadbank.Bank{}, TimeScale: 1}
	for _, spec := range p.LoadBanks {
		lb := b.LoadBank(spec.ID)
		if lb == nil {
			return nil, fmt.Errorf("the plan drives load bank %s, which the binding does not bind (it binds %v)", spec.ID, bankNames(b))
		}
		dev := devs[lb.DeviceName]
		if dev == nil {
			return nil, fmt.Errorf("load bank %s: device %s is not open", spec.ID, lb.DeviceName)
		}
		b, err := loadbank.New(spec, lb, dev, loadbank.Options{Clock: clk, Log: log})
		if err != nil {
			return nil, err
		}
		s.Banks[spec.ID] = b
	}
	return s, nil
}

func bankNames(b *binding.Binding) []string {
	var out []string
	for _, lb := range b.LoadBanks {
		out = append(out, lb.Name)
	}
	return out
}

// bankIDs lists the site's banks, sorted.
func (s *Site) bankIDs() []string {
	var out []string
	for id := range s.Banks {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// channelSource is where a channel is read: a device and its point.
type channelSource struct {
	channel string
	device  probe.Device
	point   string
	period  time.Duration // the device's update period
}

// source finds where a channel is read: a bound channel, or a load
// bank's applied load ("lb-ma/applied").
func (s *Site) source(channel string) (channelSource, error) {
	if ch := s.Binding.Channel(channel); ch != nil {
		dev := s.Devices[ch.DeviceName]
		if dev == nil {
			return channelSource{}, fmt.Errorf("channel %s: device %s is not open", channel, ch.DeviceName)
		}
		return channelSource{channel: channel, device: dev, point: ch.PointName, period: dev.Profile().UpdatePeriod}, nil
	}
	for id := range s.Banks {
		if channel == id+"/applied" {
			lb := s.Binding.LoadBank(id)
			dev := s.Devices[lb.DeviceName]
			point := lb.Roles[binding.RoleApplied]
			if point == "" {
				point = binding.RoleApplied
			}
			return channelSource{channel: channel, device: dev, point: point, period: dev.Profile().UpdatePeriod}, nil
		}
	}
	return channelSource{}, fmt.Errorf("channel %s is not bound in %s", channel, s.Binding.Dir)
}
