package runner

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/loadbank"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
)

// preflightRecord is the data of a preflight record.
type preflightRecord struct {
	OK       bool              `json:"ok"`
	Problems []string          `json:"problems"`
	Notes    []string          `json:"notes,omitempty"`
	Channels int               `json:"channels"`
	Devices  int               `json:"devices"`
	Banks    map[string]string `json:"banks"`
}

// preflight checks, without energising anything, that the plan can run
// safely on the site, and returns the problems found.
func (r *Runner) preflight(ctx context.Context) []string {
	rec := preflightRecord{Problems: []string{}, Banks: map[string]string{}}
	need, problems := r.sources()
	rec.Problems = append(rec.Problems, problems...)
	rec.Channels = len(need)
	readings, devices, err := r.readTwice(ctx, need)
	rec.Devices = devices
	if err != nil {
		rec.Problems = append(rec.Problems, "reading the devices: "+err.Error())
	}
	for _, ch := range sortedKeys(need) {
		rd, ok := readings[ch]
		switch {
		case !ok:
		case rd.Quality != probe.Good:
			rec.Problems = append(rec.Problems, fmt.Sprintf("channel %s is not readable and fresh: %v", ch, rd.Err))
		}
	}
	rec.Problems = append(rec.Problems, r.interlocksArmed(readings)...)
	rec.Problems = append(rec.Problems, r.switching()...)
	for _, id := range r.cfg.Site.bankIDs() {
		if w := r.cfg.Site.Banks[id].Watchdog(); w != nil && r.cfg.Heartbeat > w.After/3 {
			rec.Problems = append(rec.Problems, fmt.Sprintf("load bank %s drops its load after %s without a heartbeat, and the runner beats every %s: beat at least every %s",
				id, w.After, r.cfg.Heartbeat, w.After/3))
		}
		st, note, problem := r.bankReady(ctx, r.cfg.Site.Banks[id])
		rec.Banks[id] = st
		if note != "" {
			rec.Notes = append(rec.Notes, note)
		}
		if problem != "" {
			rec.Problems = append(rec.Problems, problem)
		}
	}
	rec.OK = len(rec.Problems) == 0
	r.append("preflight", "", rec)
	for _, n := range rec.Notes {
		r.log.Warn("preflight: " + n)
	}
	r.log.Info("preflight", "ok", rec.OK, "problems", len(rec.Problems), "channels", rec.Channels, "devices", rec.Devices)
	r.prog.line(fmt.Sprintf("preflight: %s on %s, %s: %s", plural(rec.Channels, "channel"), plural(rec.Devices, "device"), plural(len(rec.Banks), "load bank"), okText(rec.OK)))
	return rec.Problems
}

// switching finds square waves faster than a load bank's profile says
// its contactors can switch.
func (r *Runner) switching() []string {
	var problems []string
	for _, c := range r.cfg.Plan.Cases {
		for _, s := range c.Steps {
			var ids []string
			switch {
			case s.Op == plan.OpSquareWave:
				ids = []string{s.LoadBank}
			case s.Op == plan.OpTrain && s.Driver == plan.DriverLoadBanks:
				ids = caseBanks(c)
			}
			for _, id := range ids {
				b := r.cfg.Site.Banks[id]
				if b == nil {
					continue
				}
				p := b.Device().Profile()
				if min := p.MinSwitchingPeriod; min > 0 && seconds(s.PeriodS) < min {
					problems = append(problems, fmt.Sprintf("case %s step %s switches load bank %s with a period of %g s (%g Hz), "+
						"faster than its profile %s's switching limit of %g s (%g Hz): its contactors cannot; "+
						"drive the case with the fleet's training step (train, driver fleet) or use a load bank that can switch that fast",
						c.ID, s.ID, id, s.PeriodS, 1/s.PeriodS, p.Name, min.Seconds(), 1/min.Seconds()))
				}
			}
		}
	}
	return problems
}

func okText(ok bool) string {
	if ok {
		return "ok"
	}
	return "PROBLEMS"
}

// sources finds where every channel the plan samples is read, and checks
// that each device updates at least as fast as every case needs it.
func (r *Runner) sources() (map[string]channelSource, []string) {
	sources := map[string]channelSource{}
	fastest := map[string]float64{}
	who := map[string]string{}
	var problems []string
	need := func(channel string, period float64, by string) {
		if _, seen := fastest[channel]; !seen || period < fastest[channel] {
			fastest[channel], who[channel] = period, by
		}
	}
	for _, c := range r.cfg.Plan.Cases {
		for _, s := range c.Sampling {
			need(s.Channel, s.MaxPeriodS, "case "+c.ID)
		}
	}
	for _, il := range r.cfg.Plan.Interlocks {
		need(il.Channel, il.MaxPeriodS, "interlock "+il.ID)
	}
	for _, ch := range sortedKeys(fastest) {
		src, err := r.cfg.Site.source(ch)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		sources[ch] = src
		if src.period > seconds(fastest[ch])+time.Microsecond {
			p := src.device.Profile()
			problems = append(problems, fmt.Sprintf("%s needs %s at least every %g s, but device %s (%s) updates every %s",
				who[ch], ch, fastest[ch], src.device.Name(), p.Name, src.period))
		}
	}
	return sources, problems
}

// readTwice reads every device the plan needs, waits past the longest
// staleness limit among them and reads again, so that a device whose
// values stopped updating shows as stale. It returns the second
// readings by channel.
func (r *Runner) readTwice(ctx context.Context, need map[string]channelSource) (map[string]probe.Reading, int, error) {
	devs := map[string]probe.Device{}
	var wait time.Duration
	for _, src := range need {
		devs[src.device.Name()] = src.device
		wait = max(wait, src.device.Profile().StaleAfter)
	}
	read := func() map[string]map[string]probe.Reading {
		out := map[string]map[string]probe.Reading{}
		var mu sync.Mutex
		g := clock.NewGroup(r.clk)
		for _, name := range sortedKeys(devs) {
			d := devs[name]
			g.Go(func() { // a device that does not answer costs its timeout once
				rs, _ := d.Read(ctx)
				m := map[string]probe.Reading{}
				for _, rd := range rs {
					m[rd.Point] = rd
				}
				mu.Lock()
				out[name] = m
				mu.Unlock()
			})
		}
		g.Wait()
		return out
	}
	read()
	if err := r.clk.Sleep(ctx, wait+10*time.Millisecond); err != nil {
		return nil, len(devs), err
	}
	second := read()
	out := map[string]probe.Reading{}
	for ch, src := range need {
		if rd, ok := second[src.device.Name()][src.point]; ok {
			out[ch] = rd
		} else {
			out[ch] = probe.Reading{Quality: probe.Bad, Err: fmt.Errorf("device %s returned no reading of %s", src.device.Name(), src.point)}
		}
	}
	return out, len(devs), ctx.Err()
}

// interlocksArmed checks that every interlock channel reads inside its
// limits now: a run must not start tripped.
func (r *Runner) interlocksArmed(readings map[string]probe.Reading) []string {
	var out []string
	for _, il := range r.cfg.Plan.Interlocks {
		rd, ok := readings[il.Channel]
		if !ok || rd.Quality != probe.Good {
			continue // reported as unreadable
		}
		if il.Min != nil && rd.Value < *il.Min || il.Max != nil && rd.Value > *il.Max {
			out = append(out, fmt.Sprintf("interlock %s is already tripped: %s reads %g %s, limits %s", il.ID, il.Channel, rd.Value, il.Unit, limits(il.Min, il.Max, il.Unit)))
		}
	}
	return out
}

func limits(lo, hi *float64, unit string) string {
	l, h := math.Inf(-1), math.Inf(1)
	if lo != nil {
		l = *lo
	}
	if hi != nil {
		h = *hi
	}
	s := fmt.Sprintf("[%g, %g]", l, h)
	if unit != "" {
		s += " " + unit
	}
	return s
}

// bankReady checks a bank before energising: at 0 kW and in remote
// control. A latched fault is a note: Prepare resets it once the risk is
// accepted, and fails if it does not clear.
func (r *Runner) bankReady(ctx context.Context, b *loadbank.Bank) (status, note, problem string) {
	st, err := b.Read(ctx)
	if err != nil {
		return "unreadable", "", err.Error()
	}
	var problems []string
	if st.AppliedKW > 0.5 {
		problems = append(problems, fmt.Sprintf("carries %.1f kW (it must be at 0 before the run energises anything)", st.AppliedKW))
	}
	if !st.Remote {
		problems = append(problems, "is in local control (switch it to remote at its panel)")
	}
	if st.Fault != 0 {
		note = fmt.Sprintf("load bank %s reports fault %d (%s): it is reset once the risk is accepted", b.ID, st.Fault, st.FaultName)
	}
	if len(problems) > 0 {
		problem = "load bank " + b.ID + " " + strings.Join(problems, " and ")
	}
	return st.String(), note, problem
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
