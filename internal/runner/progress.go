package runner

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// progress shows a run to a person. On a terminal it redraws one status
// line (case n of N, step, site time elapsed and left by the plan's
// estimates, the latest readings of the case's graded channels) four
// times a second and prints events above it; elsewhere (a pipe, a file,
// TERM=dumb) it prints a plain line at each case and step with the time
// elapsed and left, and no control characters.
type progress struct {
	w    io.Writer
	term bool
	p    *plan.Plan
	clk  clock.Clock

	mu       sync.Mutex
	status   string
	runStart time.Time
	caseT0   time.Time
	c        *plan.Case
	index    int
	stepID   string
	stepN    int
	units    map[string]string
	latest   map[string]float64
	stopped  chan struct{}
	once     sync.Once
}

func newProgress(w io.Writer, term bool, p *plan.Plan, clk clock.Clock) *progress {
	pr := &progress{w: w, term: term, p: p, clk: clk, runStart: clk.Now(), stopped: make(chan struct{})}
	if w != nil && term {
		go pr.redraw()
	}
	return pr
}

func (p *progress) redraw() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stopped:
			return
		case <-t.C:
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
		}
	}
}

// draw rewrites the status line. Called with mu held.
func (p *progress) draw() {
	if p.c == nil {
		return
	}
	var reads []string
	for _, ch := range sortedKeys(p.latest) {
		reads = append(reads, fmt.Sprintf("%s %.4g %s", ch, p.latest[ch], p.units[ch]))
	}
	s := fmt.Sprintf("[%d/%d] %s · step %d/%d %s · %s · %s", p.index+1, len(p.p.Cases), p.c.ID,
		p.stepN+1, len(p.c.Steps), p.stepID, p.eta(), strings.Join(reads, ", "))
	if len(s) > 200 {
		s = s[:200]
	}
	fmt.Fprint(p.w, "\r\033[K"+s)
	p.status = s
}

// eta is the site time elapsed since the run started and what is left
// by the plan's estimates: the rest of this case and the cases after it.
// Called with mu held.
func (p *progress) eta() string {
	now := p.clk.Now()
	left := 0.0
	for _, c := range p.p.Cases[p.index+1:] {
		left += c.EstimatedS
	}
	left += max(0, p.c.EstimatedS-now.Sub(p.caseT0).Seconds())
	return fmt.Sprintf("%s elapsed, ~%s left", clockText(now.Sub(p.runStart)), clockText(time.Duration(left*float64(time.Second))))
}

func clockText(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// line prints an event line.
func (p *progress) line(s string) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.term {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, s)
	if p.term {
		p.draw()
	}
}

func (p *progress) caseStart(i int, c plan.Case) {
	p.mu.Lock()
	p.c, p.index, p.caseT0, p.stepID, p.stepN = &c, i, p.clk.Now(), "", 0
	p.units, p.latest = map[string]string{}, map[string]float64{}
	for _, k := range c.Checks {
		p.units[k.Channel] = k.Unit
	}
	eta := p.eta()
	p.mu.Unlock()
	msg := fmt.Sprintf("case %d/%d %s: %s", i+1, len(p.p.Cases), c.ID, c.Title)
	if !p.term {
		msg += " · " + eta
	}
	p.line(msg)
}

func (p *progress) step(i int, s plan.Step) {
	p.mu.Lock()
	p.stepID, p.stepN = s.ID, i
	eta := p.eta()
	p.mu.Unlock()
	if !p.term {
		p.line(fmt.Sprintf("  step %d/%d %s (%s) · %s", i+1, len(p.c.Steps), s.ID, s.Op, eta))
	}
}

func (p *progress) sample(s evidence.Sample) {
	if p.w == nil || !p.term {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, graded := p.units[s.Channel]; graded && s.Quality == "good" {
		p.latest[s.Channel] = s.Value
	}
}

func (p *progress) caseEnd(c plan.Case, res results.Case) {
	msg := fmt.Sprintf("  %s %s", res.Outcome, c.ID)
	switch res.Outcome {
	case grade.Pass:
		msg += " (" + plural(len(res.Checks), "check") + ")"
	case grade.Fail:
		var failed []string
		for _, k := range res.Checks {
			if k.Outcome == grade.Fail {
				failed = append(failed, k.Check+": "+k.Detail)
			}
		}
		sort.Strings(failed)
		msg += "\n    " + strings.Join(failed, "\n    ")
	default:
		msg += ": " + res.Reason
	}
	p.line(msg)
}

// done ends the progress with the run's site time; the counts are the
// caller's summary (sat prints them once, on stdout).
func (p *progress) done(res *results.Results) {
	what := "run " + string(res.Outcome)
	if res.Abort != nil && res.Abort.Cause == results.CauseHandover {
		what = "session ended for a hand-over"
	}
	p.line(fmt.Sprintf("%s after %s of site time", what, clockText(p.clk.Now().Sub(p.runStart))))
}

// plural is "1 check", "2 checks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func (p *progress) stop() {
	p.once.Do(func() {
		close(p.stopped)
		if p.w != nil && p.term {
			p.mu.Lock()
			fmt.Fprint(p.w, "\r\033[K")
			p.mu.Unlock()
		}
	})
}
