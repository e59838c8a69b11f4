package contract

import (
	"fmt"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/units"
)

// The operate side of a site: how often its compute is interrupted, the
// services jobs need to restart, planned maintenance and job profiles
// (site.reliability, services, maintenance, jobs). contractc domains and
// maintenance read them; no boundary's signed unit holds them, so an
// operator changes them without a vendor re-signing.

// Month is what a rate's "per month" counts: 30 days.
const Month = 720 * time.Hour

// Operate is what the site declares for the operate side.
type Operate struct {
	Reliability *Reliability // nil: not declared
	Services    []*Service   // sorted by id
	Maintenance []*Window    // sorted by id
	Jobs        []*JobProfile
}

// Reliability is the site's interruption rates.
type Reliability struct {
	Domain *Rate
	// Domains are the failure domains whose rate differs, sorted.
	Domains   []*Rate
	GPU, Node *Rate // nil: not declared
	Site      *Rate
	Pos       diag.Pos
}

// Rate is interruptions counted over a time among components.
type Rate struct {
	Name          string // "domain", "gpu", a failure domain's id
	Path          string
	Interruptions float64
	Per           Q
	Among         int // 0: one component
	Source        string
	Pos           diag.Pos
}

// PerMonth is the rate per component per Month; 0 for a rate that
// cannot be read (vet reports it).
func (r *Rate) PerMonth() float64 {
	if r == nil || !r.Per.Set || r.Per.Canon <= 0 {
		return 0
	}
	among := float64(max(r.Among, 1))
	return r.Interruptions / (r.Per.Canon / Month.Seconds()) / among
}

// Service is something jobs need to run or restart.
type Service struct {
	ID, Kind, Path string
	Replicas       []Ref // one module per replica
	Needs          int   // replicas needed to serve (defaulted)
	Protects       []Ref // IT modules; nil: every IT module
	WriteTime      Q
	Pos            diag.Pos
}

// Service kinds.
const (
	CheckpointStorage = "checkpoint_storage"
	ControlPlane      = "control_plane"
)

// Window is a planned maintenance window.
type Window struct {
	ID, Path    string
	Target      Ref
	Start       time.Time // zero when it cannot be read (vet reports it)
	StartRaw    string
	StartPos    diag.Pos
	Duration    Q
	DrainAhead  Q
	Description string
	Pos         diag.Pos
}

// JobProfile is a kind of job, for the failure-domain cost.
type JobProfile struct {
	ID, Path                 string
	GPUs                     int
	Interval, Write, Restart Q
	Generation               string
	GenerationPos            diag.Pos
	Pos                      diag.Pos
}

// Operate decodes the site's operate side. The diagnostics are unit
// problems; vet reports them with the other checks (checkOperate).
func (c *Contracts) Operate() (*Operate, diag.List) {
	if c.Loaded == nil {
		return &Operate{}, nil
	}
	d := &decoder{r: c.Loaded}
	site := node{d: d, v: c.Loaded.Value, path: ""}.at("site")
	site.path = "site"
	op := &Operate{}
	if r := site.at("reliability"); r.exists() {
		op.Reliability = d.reliability(r)
	}
	for _, s := range site.entries("services") {
		op.Services = append(op.Services, d.service(s))
	}
	for _, w := range site.entries("maintenance") {
		op.Maintenance = append(op.Maintenance, d.window(w))
	}
	for _, j := range site.entries("jobs") {
		op.Jobs = append(op.Jobs, &JobProfile{ID: j.name, Path: j.path, GPUs: j.int("gpus"), Interval: j.q("interval", units.Time),
			Write: j.q("write", units.Time), Restart: j.q("restart", units.Time), Generation: j.str("generation"),
			GenerationPos: j.at("generation").pos(), Pos: j.pos()})
	}
	return op, d.diags
}

func (d *decoder) reliability(n node) *Reliability {
	rate := func(n node) *Rate {
		if !n.exists() {
			return nil
		}
		return &Rate{Name: n.name, Path: n.path, Interruptions: n.float("interruptions"), Per: n.q("per", units.Time),
			Among: n.int("among"), Source: n.str("source"), Pos: n.pos()}
	}
	r := &Reliability{Domain: rate(n.at("domain")), GPU: rate(n.at("gpu")), Node: rate(n.at("node")), Site: rate(n.at("site")), Pos: n.pos()}
	for _, e := range n.entries("domains") {
		r.Domains = append(r.Domains, rate(e))
	}
	return r
}

func (d *decoder) service(n node) *Service {
	s := &Service{ID: n.name, Kind: n.str("kind"), Path: n.path, Replicas: n.refs("replicas"), Needs: n.int("needs"),
		WriteTime: n.q("write_time", units.Time), Pos: n.pos()}
	if n.at("protects").exists() {
		s.Protects = n.refs("protects")
		if s.Protects == nil {
			s.Protects = []Ref{}
		}
	}
	if s.Needs == 0 {
		s.Needs = 1
		if s.Kind == ControlPlane {
			s.Needs = len(s.Replicas)/2 + 1
		}
	}
	return s
}

func (d *decoder) window(n node) *Window {
	w := &Window{ID: n.name, Path: n.path, Target: n.ref("target"), StartPos: n.at("start").pos(),
		Duration: n.q("duration", units.Time), DrainAhead: n.q("drain_ahead", units.Time), Description: n.str("description"), Pos: n.pos()}
	if s := n.str("start"); s != "" {
		w.StartRaw = s
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			w.Start = t
		}
	}
	return w
}

// Operate rule ids.
const (
	RuleServiceOneDomain  = "SVC001"
	RuleServiceDomainLoss = "SVC002"
	RuleServiceRide       = "SVC003"
	RuleReliability       = "REL001"
	RuleWindow            = "MAINT001"
	RuleJob               = "JOB001"
)

var operateRules = map[string]string{
	RuleServiceOneDomain:  "a checkpoint-storage, control-plane or other service whose replicas all sit in one failure domain",
	RuleServiceDomainLoss: "a service left with fewer replicas than it needs when one failure domain is lost, or with nothing lost",
	RuleServiceRide:       "checkpoint storage whose write time is longer than the UPS ride-through of a module it protects",
	RuleReliability:       "an interruption rate that cannot be used: counted over no time, or for a failure domain that holds no compute",
	RuleWindow:            "a maintenance window that cannot be planned: a start that is not an RFC 3339 time, a duration that is not positive",
	RuleJob:               "a job profile that cannot be costed: an interval not longer than its write, a write of no time, a generation no module has",
}

// checkOperate checks the operate side against the site: services
// spread over failure domains, their checkpoint write against the UPS,
// rates, windows and job profiles. Maintenance targets are looked up
// in the graph, which holds every element.
func checkOperate(c *Contracts, idx *index, find func(string) bool) diag.List {
	op, diags := c.Operate()
	return append(diags, operateFindings(c, idx, op, find)...)
}

// CheckedOperate is Operate with vet's checks of the operate side: the
// units, services, rates, windows and job profiles. g is the site's
// graph, where maintenance targets are found.
func (c *Contracts) CheckedOperate(g *inventory.Graph) (*Operate, diag.List) {
	op, diags := c.Operate()
	find := func(name string) bool { _, ok := g.Find(name); return ok }
	return op, append(diags, operateFindings(c, newIndex(c), op, find)...)
}

func operateFindings(c *Contracts, idx *index, op *Operate, find func(string) bool) diag.List {
	var diags diag.List
	o := operateChecker{c: c, idx: idx, diags: &diags, domainOf: map[string]string{}}
	for _, m := range c.Site.Modules {
		o.domainOf[m.ID] = m.FailureDomain
	}
	for _, s := range op.Services {
		o.service(s)
	}
	if op.Reliability != nil {
		o.reliability(op.Reliability)
	}
	for _, w := range op.Maintenance {
		o.window(w, find)
	}
	gens := map[string]bool{}
	for _, m := range c.Site.Modules {
		if m.Kind == "it" && m.Generation != "" {
			gens[m.Generation] = true
		}
	}
	for _, j := range op.Jobs {
		o.job(j, gens)
	}
	return diags
}

type operateChecker struct {
	c        *Contracts
	idx      *index
	diags    *diag.List
	domainOf map[string]string // module → failure domain
}

func (o operateChecker) moduleIDs() []string {
	var ids []string
	for _, m := range o.c.Site.Modules {
		ids = append(ids, m.ID)
	}
	return ids
}

// service checks that a service survives the loss of any one failure
// domain, and that checkpoint storage can write within the UPS's
// ride-through of the modules it protects.
func (o operateChecker) service(s *Service) {
	perDomain := map[string]int{}
	var order []string
	known := true
	for _, r := range s.Replicas {
		fd, ok := o.domainOf[r.To]
		if !ok {
			o.diags.Errorf(RuleUnknownModule, r.Pos, s.Path+".replicas", "%s.replicas: %q is not a module of site %q", s.Path, r.To, o.c.Site.Name).Hint =
				"a replica runs in a module: " + didYouMean(r.To, o.moduleIDs())
			known = false
			continue
		}
		if perDomain[fd] == 0 {
			order = append(order, fd)
		}
		perDomain[fd]++
	}
	protected := o.protected(s)
	if !known {
		return
	}
	held := func(fd string) []string {
		var ms []string
		for _, m := range protected {
			if o.domainOf[m.ID] == fd {
				ms = append(ms, m.ID)
			}
		}
		return ms
	}
	what := strings.ReplaceAll(s.Kind, "_", " ")
	switch {
	case s.Needs > len(s.Replicas):
		o.diags.Errorf(RuleServiceDomainLoss, s.Pos, s.Path, "%s: %s %s needs %d replicas and has %d: it cannot serve even with nothing lost",
			s.Path, what, s.ID, s.Needs, len(s.Replicas)).Hint = "add replicas in other failure domains, or lower needs"
	case len(order) == 1:
		d := o.diags.Errorf(RuleServiceOneDomain, s.Pos, s.Path, "%s: every replica of %s %s is in failure domain %s: one failure there stops it%s",
			s.Path, what, s.ID, order[0], alsoHolds(order[0], held(order[0])))
		d.Hint = "spread the replicas across modules of other failure domains, as the design brief asks for checkpoint storage and control services"
	default:
		for _, fd := range keys(perDomain) {
			left := len(s.Replicas) - perDomain[fd]
			if left >= s.Needs {
				continue
			}
			o.diags.Errorf(RuleServiceDomainLoss, s.Pos, s.Path, "%s: losing failure domain %s leaves %s %s %d of the %d replicas it needs%s",
				s.Path, fd, what, s.ID, left, s.Needs, alsoHolds(fd, held(fd))).Hint =
				fmt.Sprintf("move replicas out of %s so that no one failure domain holds more than %d", fd, len(s.Replicas)-s.Needs)
		}
	}
	if s.Kind == CheckpointStorage && s.WriteTime.Set {
		o.rideThrough(s, protected)
	}
}

// alsoHolds says that a failure domain also holds compute the service
// serves.
func alsoHolds(fd string, modules []string) string {
	if len(modules) == 0 {
		return ""
	}
	return fmt.Sprintf("; %s also holds %s, whose jobs it serves: the jobs and what they need to restart fail together", fd, strings.Join(modules, ", "))
}

// protected are the IT modules a service serves: those it names, or
// every IT module.
func (o operateChecker) protected(s *Service) []*Module {
	var out []*Module
	if s.Protects == nil {
		for _, m := range o.c.Site.Modules {
			if m.Kind == "it" {
				out = append(out, m)
			}
		}
		return out
	}
	for _, r := range s.Protects {
		m := o.c.Site.Module(r.To)
		switch {
		case m == nil:
			o.diags.Errorf(RuleUnknownModule, r.Pos, s.Path+".protects", "%s.protects: %q is not a module of site %q", s.Path, r.To, o.c.Site.Name).Hint =
				didYouMean(r.To, o.moduleIDs())
		case m.Kind != "it":
			o.diags.Errorf(RuleKind, r.Pos, s.Path+".protects", "%s.protects: %s is a %s module: a service protects the jobs of IT modules", s.Path, r.To, m.Kind).Hint =
				"name the IT modules whose jobs use it"
		default:
			out = append(out, m)
		}
	}
	return out
}

// rideThrough warns when writing the checkpoints takes longer than a
// protected module stays up on its UPS: the module rides through as
// long as each of its racks has a feed on UPS, the longest of a rack's
// feeds (on a utility loss both feeds' UPSes carry it; each carries the
// whole load at its ride-through, BUDGET007), the shortest over racks.
func (o operateChecker) rideThrough(s *Service, protected []*Module) {
	feeds := map[string]*Feed{}
	for _, m := range o.c.Site.Modules {
		for _, b := range m.Blocks {
			for _, f := range b.Feeds {
				feeds[f.ID] = f
			}
		}
	}
	for _, m := range protected {
		worst, rack, seen := 0.0, "", false
		for _, r := range m.Racks {
			best := 0.0
			for _, p := range r.PDUs {
				if f := feeds[p.Feed.To]; f != nil && f.UPS != nil && f.UPS.RideThrough.Set {
					best = max(best, f.UPS.RideThrough.Canon)
				}
			}
			if len(r.PDUs) > 0 && (!seen || best < worst) {
				worst, rack, seen = best, r.ID, true
			}
		}
		if !seen || s.WriteTime.Canon <= worst {
			continue
		}
		ride := "has no UPS"
		if worst > 0 {
			ride = "rides through " + units.Format(worst/60, "min") + " on its UPS"
		}
		o.diags.Warnf(RuleServiceRide, s.WriteTime.Pos, s.Path+".write_time", "%s.write_time: %s takes %s to write the checkpoints of %s, whose rack %s %s: a checkpoint started on a power loss cannot finish",
			s.Path, s.ID, s.WriteTime.Raw, m.ID, rack, ride).Hint = "write faster (more bandwidth, smaller or incremental checkpoints), or give the module's feeds more ride-through"
	}
}

func (o operateChecker) reliability(r *Reliability) {
	if r.Domain == nil {
		return // the schema reports the missing field
	}
	rates := append([]*Rate{r.Domain, r.GPU, r.Node, r.Site}, r.Domains...)
	for _, rt := range rates {
		if rt != nil && rt.Per.Set && rt.Per.Canon <= 0 {
			o.diags.Errorf(RuleReliability, rt.Per.Pos, rt.Path+".per", "%s.per: %s is no time to count interruptions over", rt.Path, rt.Per.Raw).Hint =
				"count over the time the interruptions were seen in, such as \"720 h\" for a month"
		}
	}
	compute := map[string]bool{}
	for _, m := range o.c.Site.Modules {
		if m.Kind == "it" && m.FailureDomain != "" {
			compute[m.FailureDomain] = true
		}
	}
	for _, rt := range r.Domains {
		if !compute[rt.Name] {
			o.diags.Errorf(RuleReliability, rt.Pos, rt.Path, "%s: failure domain %s holds no IT module: its rate would count for no job", rt.Path, rt.Name).Hint =
				"name a failure domain of an IT module: " + didYouMean(rt.Name, keys(compute))
		}
	}
}

func (o operateChecker) window(w *Window, find func(string) bool) {
	if w.Target.To != "" && !find(w.Target.To) {
		o.diags.Errorf(RuleUnknownElement, w.Target.Pos, w.Path+".target", "%s.target: %q is not a module or element of site %q", w.Path, w.Target.To, o.c.Site.Name).Hint =
			"name a module (\"l2\") or an element by its key (\"l2/loop/cdu-1\", \"p2/block/a\"): " + didYouMean(w.Target.To, keys(o.idx.elements))
	}
	if w.Start.IsZero() {
		o.diags.Errorf(RuleWindow, w.StartPos, w.Path+".start", "%s.start: %q is not an RFC 3339 time", w.Path, w.StartRaw).Hint =
			"write the date, time and zone, such as \"2026-03-14T06:00:00Z\" or \"2026-03-14T07:00:00+01:00\""
	}
	if w.Duration.Set && w.Duration.Canon <= 0 {
		o.diags.Errorf(RuleWindow, w.Duration.Pos, w.Path+".duration", "%s.duration: %s is not a window", w.Path, w.Duration.Raw).Hint = "give the time the work takes, such as \"8 h\""
	}
	if w.DrainAhead.Set && w.DrainAhead.Canon < 0 {
		o.diags.Errorf(RuleWindow, w.DrainAhead.Pos, w.Path+".drain_ahead", "%s.drain_ahead: %s is before nothing", w.Path, w.DrainAhead.Raw).Hint = "give a time of 0 or more, such as \"30 min\""
	}
}

func (o operateChecker) job(j *JobProfile, gens map[string]bool) {
	if j.Write.Set && j.Write.Canon <= 0 {
		o.diags.Errorf(RuleJob, j.Write.Pos, j.Path+".write", "%s.write: a checkpoint written in %s: no interval is optimal for it", j.Path, j.Write.Raw).Hint =
			"give the time one checkpoint's write stops the job, such as \"1 min\""
	}
	if j.Interval.Set && j.Write.Set && j.Interval.Canon <= j.Write.Canon {
		o.diags.Errorf(RuleJob, j.Interval.Pos, j.Path+".interval", "%s.interval: %s is not longer than the write (%s): the job would do nothing but checkpoint",
			j.Path, j.Interval.Raw, j.Write.Raw).Hint = "the interval runs from the start of one checkpoint to the start of the next, write included"
	}
	if j.Restart.Set && j.Restart.Canon < 0 {
		o.diags.Errorf(RuleJob, j.Restart.Pos, j.Path+".restart", "%s.restart: %s is not a restart time", j.Path, j.Restart.Raw).Hint = "give a time of 0 or more"
	}
	if j.Generation != "" && !gens[j.Generation] {
		o.diags.Errorf(RuleJob, j.GenerationPos, j.Path+".generation", "%s.generation: no IT module is of generation %q", j.Path, j.Generation).Hint =
			didYouMean(j.Generation, keys(gens))
	}
}
