package runner

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/evidence"
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
	devices map[string]*polled // by device name
	locks   map[string][]*lock // by channel

	mu     sync.Mutex
	latest map[string]evidence.Sample
	notify chan struct{} // closed and replaced on every sample
	n      int64

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// polled is one device and the channels read from it.
type polled struct {
	dev    probe.Device
	period time.Duration
	chans  []channelSource
}

// lock is an interlock of the case and when its channel last read good.
type lock struct {
	il       plan.Interlock
	lastGood time.Time
}

// newSampler plans a case's sampling: the channels its checks grade and
// its interlocks watch, each device read at the fastest rate any of its
// channels needs (half the plan's longest period, to keep a margin),
// never faster than it updates. The load banks the case drives are read
// too, as "<bank>/applied".
func (r *Runner) newSampler(c plan.Case) (*sampler, error) {
	s := &sampler{r: r, caseID: c.ID, devices: map[string]*polled{}, locks: map[string][]*lock{},
		latest: map[string]evidence.Sample{}, notify: make(chan struct{})}
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
		s.locks[il.Channel] = append(s.locks[il.Channel], &lock{il: *il})
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
			watch = min(watch, seconds(l.il.MaxSilenceS)/10)
		}
	}
	for _, p := range s.devices {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			probe.Poll(ctx, []probe.Device{p.dev}, p.period, s.r.clk, func(ps probe.Sample) { s.sink(p, ps) })
		}()
	}
	if len(s.locks) > 0 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.watchSilence(ctx, max(watch, 10*time.Millisecond))
		}()
	}
}

// halt stops sampling and waits for the pollers.
func (s *sampler) halt() {
	if s.stop != nil {
		s.stop()
	}
	s.wg.Wait()
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
		if smp.Quality != probe.Good.String() {
			smp.Value = 0
		}
		s.check(smp)
		out = append(out, smp)
	}
	if err := s.r.b.Sample(out...); err != nil {
		s.r.Abort(results.CauseFatal, "cannot write the evidence: "+err.Error(), nil)
	}
	s.mu.Lock()
	for _, smp := range out {
		s.latest[smp.Channel] = smp
		s.r.prog.sample(smp)
	}
	s.n += int64(len(out))
	close(s.notify)
	s.notify = make(chan struct{})
	s.mu.Unlock()
}

// check trips an interlock on a good sample outside its limits.
func (s *sampler) check(smp evidence.Sample) {
	ls := s.locks[smp.Channel]
	if len(ls) == 0 || smp.Quality != probe.Good.String() {
		return
	}
	for _, l := range ls {
		s.mu.Lock()
		l.lastGood = smp.Time
		s.mu.Unlock()
		il := l.il
		if (il.Min == nil || smp.Value >= *il.Min) && (il.Max == nil || smp.Value <= *il.Max) {
			continue
		}
		v := smp.Value
		reason := fmt.Sprintf("interlock %s tripped: %s read %g %s at %s, outside %s (%s)", il.ID, il.Channel, v, il.Unit,
			smp.Time.UTC().Format("15:04:05.000"), limits(il.Min, il.Max, il.Unit), il.Reason)
		s.r.append("interlock", s.caseID, map[string]any{"interlock": il.ID, "channel": il.Channel, "value": v,
			"min": il.Min, "max": il.Max, "unit": il.Unit, "sample_time": smp.Time})
		s.r.Abort(results.CauseInterlock, reason, func(a *results.Abort) { a.Interlock, a.Channel, a.Value = il.ID, il.Channel, &v })
		return
	}
}

// watchSilence trips an interlock whose channel has had no good sample
// for longer than its max_silence_s: a dead controller looks exactly
// like a quiet one.
func (s *sampler) watchSilence(ctx context.Context, every time.Duration) {
	for {
		if err := s.r.clk.Sleep(ctx, every); err != nil {
			return
		}
		now := s.r.clk.Now()
		for ch, ls := range s.locks {
			for _, l := range ls {
				s.mu.Lock()
				quiet := now.Sub(l.lastGood)
				s.mu.Unlock()
				if quiet <= seconds(l.il.MaxSilenceS) {
					continue
				}
				il := l.il
				reason := fmt.Sprintf("interlock %s tripped: %s has had no good sample for %s (limit %g s): a silent safety channel is a trip",
					il.ID, ch, quiet.Round(time.Millisecond), il.MaxSilenceS)
				s.r.append("interlock", s.caseID, map[string]any{"interlock": il.ID, "channel": ch, "silent_s": quiet.Seconds(), "max_silence_s": il.MaxSilenceS})
				s.r.Abort(results.CauseInterlock, reason, func(a *results.Abort) { a.Interlock, a.Channel = il.ID, ch })
				return
			}
		}
	}
}

// awaitRaised waits until channel's latest good sample is raised (≥ 0.5)
// or timeout passes; it reports whether it was raised and when.
func (s *sampler) awaitRaised(ctx context.Context, channel string, timeout time.Duration) (bool, time.Time, error) {
	expired := s.r.clk.After(timeout)
	for {
		s.mu.Lock()
		last, ok := s.latest[channel]
		wake := s.notify
		s.mu.Unlock()
		if ok && last.Quality == probe.Good.String() && last.Value >= 0.5 {
			return true, last.Time, nil
		}
		select {
		case <-ctx.Done():
			return false, time.Time{}, ctx.Err()
		case <-wake:
		case <-expired:
			return false, time.Time{}, nil
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
