package runner

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/loadbank"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/results"
)

// sampler reads a case's channels at the plan's rates while the case
// runs, writes every reading to the bundle, checks the case's
// interlocks on every sample and watches their channels for silence.
type sampler struct {
	r       *Runner
	caseID  string
	devices map[string]*polled          // by device name
	locks   map[string][]*lock          // by channel
	banks   map[string][]*loadbank.Bank // the case's load banks, by device
	// lastPoll is, by device, when its last read came back
	lastPoll map[string]time.Time

	mu     sync.Mutex
	latest map[string]evidence.Sample
	sample *clock.Cond // broadcast on every sample
	n      int64

	stop  context.CancelFunc
	group *clock.Group
}

// polled is one device and the channels read from it.
type polled struct {
	dev    probe.Device
	period time.Duration
	chans  []channelSource
}

// lock is an interlock of the case, when its channel last read good,
// and the device it is read from.
type lock struct {
	il       plan.Interlock
	device   string
	lastGood time.Time
}

// newSampler plans a case's sampling: the channels its checks grade and
// its interlocks watch, each device read at the fastest rate any of its
// channels needs (half the plan's longest period, to keep a margin),
// never faster than it updates. The load banks the case drives are read
// too, as "<bank>/applied".
func (r *Runner) newSampler(c plan.Case) (*sampler, error) {
	s := &sampler{r: r, caseID: c.ID, devices: map[string]*polled{}, locks: map[string][]*lock{}, banks: map[string][]*loadbank.Bank{},
		lastPoll: map[string]time.Time{}, latest: map[string]evidence.Sample{}, group: clock.NewGroup(r.clk)}
	s.sample = clock.NewCond(r.clk, &s.mu)
	added := map[string]bool{}
	add := func(channel string, maxPeriod time.Duration) error {
		src, err := r.cfg.Site.source(channel)
		if err != nil {
			return err
		}
		p := s.devices[src.device.Name()]
		if p == nil {
			p = &polled{dev: src.device, period: time.Hour}
			s.devices[src.device.Name()] = p
		}
		if !added[channel] {
			added[channel] = true
			p.chans = append(p.chans, src)
		}
		p.period = min(p.period, max(src.period, maxPeriod/2))
		return nil
	}
	for _, smp := range c.Sampling {
		if err := add(smp.Channel, seconds(smp.MaxPeriodS)); err != nil {
			return nil, err
		}
	}
	for _, id := range caseBanks(c) {
		if b := r.cfg.Site.Banks[id]; b != nil {
			if err := add(id+"/applied", b.Device().Profile().UpdatePeriod); err != nil {
				return nil, err
			}
			s.banks[b.Device().Name()] = append(s.banks[b.Device().Name()], b)
		}
	}
	for _, id := range c.Interlocks {
		il := r.interlock(id)
		if il == nil {
			return nil, fmt.Errorf("case %s names interlock %s, which the plan does not declare", c.ID, id)
		}
		if err := add(il.Channel, seconds(il.MaxPeriodS)); err != nil {
			return nil, err
		}
		src, _ := r.cfg.Site.source(il.Channel)
		s.locks[il.Channel] = append(s.locks[il.Channel], &lock{il: *il, device: src.device.Name()})
	}
	return s, nil
}

func (r *Runner) interlock(id string) *plan.Interlock {
	for i := range r.cfg.Plan.Interlocks {
		if r.cfg.Plan.Interlocks[i].ID == id {
			return &r.cfg.Plan.Interlocks[i]
		}
	}
	return nil
}

// caseBanks lists the load banks a case's steps drive.
func caseBanks(c plan.Case) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range c.Steps {
		if s.LoadBank != "" && !seen[s.LoadBank] {
			seen[s.LoadBank] = true
			out = append(out, s.LoadBank)
		}
	}
	// a train step driving the load banks names them in its preconditions
	for _, p := range c.Preconditions {
		if p.LoadBank != "" && !seen[p.LoadBank] {
			seen[p.LoadBank] = true
			out = append(out, p.LoadBank)
		}
	}
	return out
}

// start polls every device until stop; the silence watch runs beside.
func (s *sampler) start(ctx context.Context) {
	ctx, s.stop = context.WithCancel(ctx)
	now := s.r.clk.Now()
	watch := time.Duration(math.MaxInt64)
	for _, ls := range s.locks {
		for _, l := range ls {
			l.lastGood = now
			s.lastPoll[l.device] = now
			watch = min(watch, seconds(l.il.MaxSilenceS)/10)
		}
	}
	for _, name := range sortedKeys(s.devices) {
		p := s.devices[name]
		s.group.Go(func() {
			probe.Poll(ctx, []probe.Device{p.dev}, p.period, s.r.clk, func(ps probe.Sample) { s.sink(p, ps) })
		})
	}
	if len(s.locks) > 0 {
		s.group.Go(func() { s.watchSilence(ctx, max(watch, 10*time.Millisecond)) })
	}
}

// halt stops sampling and waits for the pollers.
func (s *sampler) halt() {
	if s.stop != nil {
		s.stop()
	}
	s.group.Wait()
}

// sink takes one read of one device: interlocks first, then the
// bundle, then the latest values.
func (s *sampler) sink(p *polled, ps probe.Sample) {
	byPoint := make(map[string]probe.Reading, len(ps.Readings))
	for _, rd := range ps.Readings {
		byPoint[rd.Point] = rd
	}
	out := make([]evidence.Sample, 0, len(p.chans))
	for _, src := range p.chans {
		rd, ok := byPoint[src.point]
		smp := evidence.Sample{Channel: src.channel, Time: rd.Received, Value: rd.Value, Quality: rd.Quality.String()}
		if !ok || rd.Received.IsZero() {
			smp.Time, smp.Value, smp.Quality = ps.Done, 0, probe.Bad.String()
		}
		if smp.Quality == probe.Bad.String() {
			smp.Value = 0 // no value was read; a stale one keeps what the device said
		}
		s.check(smp, ps.Started)
		out = append(out, smp)
	}
	s.mu.Lock()
	s.lastPoll[p.dev.Name()] = ps.Done
	s.mu.Unlock()
	s.watchBanks(ps)
	if err := s.r.b.Sample(out...); err != nil {
		s.r.Abort(results.CauseFatal, "cannot write the evidence: "+err.Error(), nil)
	}
	s.mu.Lock()
	for _, smp := range out {
		s.latest[smp.Channel] = smp
		s.r.prog.sample(smp)
	}
	s.n += int64(len(out))
	s.sample.Broadcast()
	s.mu.Unlock()
	s.observeSamples(out)
}

// check trips an interlock on a good sample outside its limits, and on
// a read sent (at sent) longer than max_silence_s after the channel's
// last good sample that brought no good value either: a silent safety
// channel is a trip, and a dead controller looks exactly like a quiet
// one.
func (s *sampler) check(smp evidence.Sample, sent time.Time) {
	ls := s.locks[smp.Channel]
	if len(ls) == 0 {
		return
	}
	for _, l := range ls {
		il := l.il
		s.mu.Lock()
		if smp.Quality == probe.Good.String() {
			l.lastGood = smp.Time
		}
		quiet := sent.Sub(l.lastGood)
		s.mu.Unlock()
		if smp.Quality != probe.Good.String() {
			if quiet > seconds(il.MaxSilenceS) {
				s.silent(l, quiet, "has had no good sample")
				return
			}
			continue
		}
		if (il.Min == nil || smp.Value >= *il.Min) && (il.Max == nil || smp.Value <= *il.Max) {
			continue
		}
		v := smp.Value
		reason := fmt.Sprintf("interlock %s tripped: %s read %g %s at %s, outside %s (%s)", il.ID, il.Channel, v, il.Unit,
			smp.Time.UTC().Format("15:04:05.000"), limits(il.Min, il.Max, il.Unit), il.Reason)
		s.r.append("interlock", s.caseID, map[string]any{"interlock": il.ID, "channel": il.Channel, "value": v,
			"min": il.Min, "max": il.Max, "unit": il.Unit, "sample_time": smp.Time})
		s.r.Abort(results.CauseInterlock, reason, func(a *results.Abort) { a.Interlock, a.Channel, a.Value = il.ID, il.Channel, &v })
		s.r.observeTrip(reason)
		return
	}
}

// silent trips an interlock whose channel has been silent too long.
func (s *sampler) silent(l *lock, quiet time.Duration, what string) {
	il := l.il
	reason := fmt.Sprintf("interlock %s tripped: %s %s for %s (limit %g s): a silent safety channel is a trip",
		il.ID, il.Channel, what, quiet.Round(time.Millisecond), il.MaxSilenceS)
	s.r.append("interlock", s.caseID, map[string]any{"interlock": il.ID, "channel": il.Channel, "silent_s": quiet.Seconds(), "max_silence_s": il.MaxSilenceS})
	s.r.Abort(results.CauseInterlock, reason, func(a *results.Abort) { a.Interlock, a.Channel = il.ID, il.Channel })
	s.r.observeTrip(reason)
}

// watchSilence trips an interlock whose device has not answered at all
// (no read came back, good or bad) for longer than max_silence_s plus
// the device's timeout and polling period: the runner has lost sight of
// the channel. A device that answers with errors trips in check, at its
// first read past the limit.
func (s *sampler) watchSilence(ctx context.Context, every time.Duration) {
	scale := s.r.cfg.Site.wallScale()
	for {
		if err := s.r.clk.Sleep(ctx, every); err != nil {
			return
		}
		now := s.r.clk.Now()
		for _, ch := range sortedKeys(s.locks) {
			for _, l := range s.locks[ch] {
				p := s.devices[l.device]
				grace := p.period + time.Duration(float64(deviceTimeout(s.r.cfg.Site, l.device))*scale)
				s.mu.Lock()
				quiet, since := now.Sub(s.lastPoll[l.device]), now.Sub(l.lastGood)
				s.mu.Unlock()
				if quiet > seconds(l.il.MaxSilenceS)+grace && since > seconds(l.il.MaxSilenceS) {
					s.silent(l, since, "has had no answer from device "+l.device)
					return
				}
			}
		}
	}
}

// deviceTimeout is how long one request to a device may take.
func deviceTimeout(site *Site, name string) time.Duration {
	if site.Binding != nil {
		if d := site.Binding.Device(name); d != nil && d.Timeout > 0 {
			return d.Timeout
		}
	}
	return time.Second
}

// awaitRaised waits until channel's latest good sample is raised (≥ 0.5)
// or timeout passes; it reports whether it was raised and when.
func (s *sampler) awaitRaised(ctx context.Context, channel string, timeout time.Duration) (bool, time.Time, error) {
	deadline := s.r.clk.Now().Add(timeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		last, ok := s.latest[channel]
		if ok && last.Quality == probe.Good.String() && last.Value >= 0.5 {
			return true, last.Time, nil
		}
		left := deadline.Sub(s.r.clk.Now())
		if left <= 0 {
			return false, time.Time{}, nil
		}
		if _, err := s.sample.Wait(ctx, left); err != nil {
			return false, time.Time{}, err
		}
	}
}

// gaps is, per channel, the longest gap a graded window may have: twice
// the plan's sampling period plus the configured slack.
func gaps(c plan.Case, slack time.Duration) map[string]float64 {
	out := map[string]float64{}
	for _, smp := range c.Sampling {
		out[smp.Channel] = 2*smp.MaxPeriodS + slack.Seconds()
	}
	return out
}
