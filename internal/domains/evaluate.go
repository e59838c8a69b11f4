package domains

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Options shape a report.
type Options struct {
	// Rows is how many placements each job shows: k = the fewest failure
	// domains that hold it, and up from there; 0 shows every k up to the
	// domains of its generation.
	Rows int
}

// DefaultRows shows k = 1, 2, 3 for a job one domain holds: the design
// brief's packed and spread over three.
const DefaultRows = 3

// Report is the failure-domain cost of every job on a site.
type Report struct {
	Site    string      `json:"site"`
	Rates   RateSet     `json:"rates"`
	Domains []DomainRow `json:"domains"`
	// Largest is, per generation, the largest job one failure domain
	// holds.
	Largest []Largest   `json:"largest"`
	Jobs    []JobReport `json:"jobs"`
	Refused int         `json:"refused"`
	Advice  []string    `json:"advice"`
}

// RateSet is the rates a report used, and where each came from.
type RateSet struct {
	MonthHours float64            `json:"month_hours"`
	Domain     Rate               `json:"domain"`
	Domains    map[string]float64 `json:"domains,omitempty"`
	// DomainSources says where each of Domains comes from.
	DomainSources map[string]string `json:"domain_sources,omitempty"`
	GPU           Rate              `json:"gpu"`
	Node          Rate              `json:"node"`
	Site          Rate              `json:"site"`
}

// Rate is interruptions per month, with its source.
type Rate struct {
	PerMonth float64 `json:"per_month"`
	Source   string  `json:"source"`
}

// DomainRow is a failure domain as the report uses it.
type DomainRow struct {
	Domain
	Rate float64 `json:"interruptions_per_month"`
}

// Largest is the largest job one failure domain of a generation holds.
type Largest struct {
	Generation string   `json:"generation"`
	GPUs       int      `json:"gpus"`
	Domains    []string `json:"domains"` // those that hold it
	Total      int      `json:"total_gpus"`
}

// JobReport is one job's cost, placement by placement.
type JobReport struct {
	Job
	IntervalMin float64 `json:"interval_min"`
	WriteMin    float64 `json:"write_min"`
	RestartMin  float64 `json:"restart_min"`
	// LostPerInterruptionMin is interval/2 + restart: on average half an
	// interval of work since the last checkpoint, and the restart.
	LostPerInterruptionMin float64 `json:"lost_per_interruption_min"`
	// Placed is the generation the job runs on; Refused says why no
	// placement runs it.
	Placed  string `json:"placed_on,omitempty"`
	Refused string `json:"refused,omitempty"`
	Nodes   int    `json:"nodes,omitempty"`
	// Fewest is the fewest failure domains that hold it.
	Fewest     int         `json:"fewest_domains,omitempty"`
	Placements []Placement `json:"placements,omitempty"`
	// SpanMin is what spanning Fewest domains costs against one domain's
	// interruptions, in minutes a month (0 when one domain holds it).
	SpanMin float64 `json:"span_cost_min,omitempty"`
	// Placeable is the part of the loss placement changes: the domains'
	// share, from the cheapest placement to the dearest over every k
	// (shown or not); Fixed the part the job's size fixes (its GPUs and
	// nodes, the site).
	Placeable  [2]float64  `json:"placeable_min,omitempty"`
	FixedMin   float64     `json:"fixed_min,omitempty"`
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
}

// Parts is a figure split by where the interruptions come from.
type Parts struct {
	Domain float64 `json:"domain"`
	Node   float64 `json:"node"` // GPU and node faults
	Site   float64 `json:"site"`
	Total  float64 `json:"total"`
}

func (p Parts) scale(f float64) Parts {
	return Parts{p.Domain * f, p.Node * f, p.Site * f, p.Total * f}
}

// Placement is a job over k failure domains.
type Placement struct {
	K int `json:"k"`
	// Domains are the domains it runs in, cheapest first (by rate, then
	// the largest, then by name).
	Domains       []string `json:"domains"`
	Interruptions Parts    `json:"interruptions_per_month"`
	// LostMin is the first-order loss, interruptions × (interval/2 +
	// restart), in wall minutes a month; GPUHours is it times the GPUs.
	LostMin  Parts   `json:"lost_min_per_month"`
	GPUHours float64 `json:"lost_gpu_hours_per_month"`
	MTBFh    float64 `json:"mtbf_hours"` // 0: no interruptions
	// ETTR is Daly's complete model at the job's interval.
	ETTR float64 `json:"ettr"`
}

// Checkpoint is the interval the failure rate asks for, at the job's
// packed placement, against the job's own. Intervals are start to
// start: the papers' τ plus the write.
type Checkpoint struct {
	MTBFh      float64 `json:"mtbf_hours"`
	YoungMin   float64 `json:"young_min"`
	DalyMin    float64 `json:"daly_min"`
	OptimumMin float64 `json:"optimum_min"`
	// ETTR at the job's interval, at Daly's and at the optimum.
	ETTRFixed   float64 `json:"ettr_fixed"`
	ETTRDaly    float64 `json:"ettr_daly"`
	ETTROptimum float64 `json:"ettr_optimum"`
	// CostGPUHours is what the job's interval costs against the optimum
	// a month: (ETTR optimum − ETTR fixed) × month × GPUs.
	CostGPUHours float64 `json:"fixed_interval_cost_gpu_hours_per_month"`
	// WriteBound is set when even the optimum interval would compute no
	// longer than the job writes (a write of about 0.8 MTBF or more; see
	// domains.WriteBound): no interval helps.
	WriteBound bool `json:"write_bound,omitempty"`
}

// Validate says what is wrong with a job profile.
func (j Job) Validate() error {
	var errs []error
	if j.GPUs <= 0 {
		errs = append(errs, fmt.Errorf("%d GPUs: give the GPUs the job runs on", j.GPUs))
	}
	if j.Write <= 0 {
		errs = append(errs, fmt.Errorf("a checkpoint written in %s: give the time one write stops the job", duration(j.Write.Minutes())))
	}
	if j.Interval <= j.Write {
		errs = append(errs, fmt.Errorf("interval %s is not longer than the write (%s): the interval runs from the start of one checkpoint to the start of the next, write included",
			duration(j.Interval.Minutes()), duration(j.Write.Minutes())))
	}
	if j.Restart < 0 {
		errs = append(errs, errors.New("a negative restart time: give a time of 0 or more"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%sjob %s: %w", where(j.Where), j.Name, err)
	}
	return nil
}

func where(w string) string {
	if w == "" {
		return ""
	}
	return w + ": "
}

// Evaluate costs every job on the domains at the rates; sources say
// where each rate comes from ("domain", "gpu", "node", "site", and
// "domain fd-a" for a domain's own), for the report. A job profile
// that cannot be costed is an error naming it; a job no placement runs
// is refused in the report.
func Evaluate(site string, doms []Domain, rates Rates, sources map[string]string, jobs []Job, opts Options) (Report, error) {
	if err := rates.validate(); err != nil {
		return Report{}, err
	}
	m := newModel(doms, rates)
	r := Report{Site: site, Rates: rateSet(rates, sources), Domains: []DomainRow{}, Jobs: make([]JobReport, 0, len(jobs))}
	for _, d := range doms {
		r.Domains = append(r.Domains, DomainRow{Domain: d, Rate: rates.Of(d.Name)})
	}
	r.Largest = m.largest()
	var errs []error
	seen := map[string]Job{}
	for _, j := range jobs {
		if err := j.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if first, ok := seen[j.Name]; ok {
			errs = append(errs, fmt.Errorf("%sjob %s is declared twice (first at %s): give each profile its own name", where(j.Where), j.Name, cmp.Or(first.Where, "?")))
			continue
		}
		seen[j.Name] = j
		jr := m.job(j, opts)
		if jr.Refused != "" {
			r.Refused++
		}
		r.Jobs = append(r.Jobs, jr)
	}
	if err := errors.Join(errs...); err != nil {
		return Report{}, err
	}
	r.Advice = advice(r)
	return r, nil
}

func (r Rates) validate() error {
	bad := r.Domain < 0 || r.GPU < 0 || r.Node < 0 || r.Site < 0
	for _, v := range r.Domains {
		bad = bad || v < 0
	}
	if bad || math.IsNaN(r.Domain+r.GPU+r.Node+r.Site) {
		return fmt.Errorf("rates %+v: interruptions a month are numbers of 0 or more", r)
	}
	return nil
}

func rateSet(r Rates, sources map[string]string) RateSet {
	src := func(name string) string { return cmp.Or(sources[name], "not declared") }
	rs := RateSet{MonthHours: Month.Hours(), Domain: Rate{r.Domain, src("domain")}, GPU: Rate{r.GPU, src("gpu")},
		Node: Rate{r.Node, src("node")}, Site: Rate{r.Site, src("site")}}
	if len(r.Domains) > 0 {
		rs.Domains, rs.DomainSources = r.Domains, map[string]string{}
		for d := range r.Domains {
			rs.DomainSources[d] = src("domain " + d)
		}
	}
	return rs
}

// model is the domains of each generation, ordered for placement.
type model struct {
	rates Rates
	gens  []*generation // sorted by name
}

// generation is one generation's domains: by rate (cheapest first, then
// the largest, then by name) with prefix sums of their GPUs, and their
// GPUs largest first with prefix sums.
type generation struct {
	name        string
	doms        []member
	names       []string  // of doms
	capPrefix   []int     // GPUs of doms[:k]
	ratePrefix  []float64 // rates of doms[:k]
	largest     []int     // GPUs, descending
	largePrefix []int
	nodes, gpus int
}

type member struct {
	name       string
	rate       float64
	gpus, node int
}

func newModel(doms []Domain, rates Rates) *model {
	byGen := map[string]*generation{}
	for _, d := range doms {
		for _, p := range d.Pools {
			if p.GPUs <= 0 {
				continue
			}
			g := byGen[p.Generation]
			if g == nil {
				g = &generation{name: p.Generation}
				byGen[p.Generation] = g
			}
			g.doms = append(g.doms, member{d.Name, rates.Of(d.Name), p.GPUs, p.Nodes})
			g.nodes += p.Nodes
			g.gpus += p.GPUs
		}
	}
	m := &model{rates: rates}
	for _, g := range byGen {
		slices.SortFunc(g.doms, func(a, b member) int {
			return cmp.Or(cmp.Compare(a.rate, b.rate), cmp.Compare(b.gpus, a.gpus), cmp.Compare(a.name, b.name))
		})
		g.capPrefix, g.ratePrefix = make([]int, len(g.doms)+1), make([]float64, len(g.doms)+1)
		for i, d := range g.doms {
			g.names = append(g.names, d.name)
			g.capPrefix[i+1] = g.capPrefix[i] + d.gpus
			g.ratePrefix[i+1] = g.ratePrefix[i] + d.rate
			g.largest = append(g.largest, d.gpus)
		}
		slices.SortFunc(g.largest, func(a, b int) int { return cmp.Compare(b, a) })
		g.largePrefix = make([]int, len(g.largest)+1)
		for i, c := range g.largest {
			g.largePrefix[i+1] = g.largePrefix[i] + c
		}
		m.gens = append(m.gens, g)
	}
	slices.SortFunc(m.gens, func(a, b *generation) int { return cmp.Compare(a.name, b.name) })
	return m
}

// fewest is the fewest domains of g that hold gpus (0: none do).
func (g *generation) fewest(gpus int) int {
	k, ok := slices.BinarySearch(g.largePrefix, gpus)
	if !ok && k >= len(g.largePrefix) {
		return 0
	}
	return max(k, 1)
}

// choose picks k domains of g that hold gpus at the lowest total rate
// it finds, cheapest first, and their rate: the k cheapest when they
// hold it (then no k domains cost less); otherwise, domain by domain,
// the cheapest that still lets the rest be filled to hold the job with
// the largest of those left.
func (g *generation) choose(k, gpus int) ([]string, float64) {
	if g.capPrefix[k] >= gpus {
		return g.names[:k:k], g.ratePrefix[k]
	}
	used := make([]bool, len(g.doms))
	have, n := 0, 0
	for ; n < k; n++ {
		for i, d := range g.doms {
			if !used[i] && have+d.gpus+g.largestOthers(used, i, k-n-1) >= gpus {
				used[i] = true
				have += d.gpus
				break
			}
		}
	}
	names, rate := make([]string, 0, k), 0.0
	for i, d := range g.doms {
		if used[i] {
			names, rate = append(names, d.name), rate+d.rate
		}
	}
	return names, rate
}

// largestOthers is the GPUs of the n largest domains not used and not i.
func (g *generation) largestOthers(used []bool, skip, n int) int {
	var caps []int
	for i, d := range g.doms {
		if !used[i] && i != skip {
			caps = append(caps, d.gpus)
		}
	}
	slices.SortFunc(caps, func(a, b int) int { return cmp.Compare(b, a) })
	total := 0
	for _, c := range caps[:min(n, len(caps))] {
		total += c
	}
	return total
}

func (m *model) largest() []Largest {
	out := []Largest{}
	for _, g := range m.gens {
		l := Largest{Generation: g.name, GPUs: g.largest[0], Total: g.gpus}
		for _, d := range g.doms {
			if d.gpus == l.GPUs {
				l.Domains = append(l.Domains, d.name)
			}
		}
		slices.Sort(l.Domains)
		out = append(out, l)
	}
	return out
}

func (m *model) job(j Job, opts Options) JobReport {
	jr := JobReport{Job: j, IntervalMin: j.Interval.Minutes(), WriteMin: j.Write.Minutes(), RestartMin: j.Restart.Minutes(),
		LostPerInterruptionMin: lostPer(j).Minutes()}
	g, why := m.generationFor(j)
	if g == nil {
		jr.Refused = why
		return jr
	}
	jr.Placed = g.name
	jr.Fewest = g.fewest(j.GPUs)
	jr.Nodes = int(math.Ceil(float64(j.GPUs) * float64(g.nodes) / float64(g.gpus)))
	last := len(g.doms)
	if opts.Rows > 0 {
		last = min(last, jr.Fewest+opts.Rows-1)
	}
	jr.Placements = make([]Placement, 0, last-jr.Fewest+1)
	lo, hi := math.Inf(1), 0.0
	for k := jr.Fewest; k <= len(g.doms); k++ {
		names, rate := g.choose(k, j.GPUs)
		lo, hi = min(lo, rate), max(hi, rate)
		if k <= last {
			jr.Placements = append(jr.Placements, place(j, m.rates, names, rate, jr.Nodes))
		}
	}
	packed := jr.Placements[0]
	jr.Placeable = [2]float64{lo * lostPer(j).Minutes(), hi * lostPer(j).Minutes()}
	jr.FixedMin = packed.LostMin.Node + packed.LostMin.Site
	if jr.Fewest > 1 {
		jr.SpanMin = (packed.Interruptions.Domain - g.doms[0].rate) * lostPer(j).Minutes()
	}
	jr.Checkpoint = checkpoint(j, MTBF(packed.Interruptions.Total))
	return jr
}

// generationFor is the generation a job runs on: its own, or the one
// that holds it in the fewest domains (then the cheapest, then by
// name); nil and why when none holds it.
func (m *model) generationFor(j Job) (*generation, string) {
	var best *generation
	for _, g := range m.gens {
		if j.Generation != "" && g.name != j.Generation {
			continue
		}
		k := g.fewest(j.GPUs)
		if k == 0 {
			continue
		}
		if best == nil || k < best.fewest(j.GPUs) {
			best = g
		} else if k == best.fewest(j.GPUs) {
			_, rg := g.choose(k, j.GPUs)
			_, rb := best.choose(k, j.GPUs)
			if rg < rb {
				best = g
			}
		}
	}
	if best != nil {
		return best, ""
	}
	if j.Generation != "" {
		for _, g := range m.gens {
			if g.name == j.Generation {
				return nil, fmt.Sprintf("needs %d GPUs of %s; the site has %d in %s", j.GPUs, g.name, g.gpus, count(len(g.doms), "failure domain"))
			}
		}
		return nil, fmt.Sprintf("no failure domain has compute of generation %s", j.Generation)
	}
	if len(m.gens) == 0 {
		return nil, "the site has no compute"
	}
	big, total := m.gens[0], 0
	for _, g := range m.gens {
		total += g.gpus
		if g.gpus > big.gpus {
			big = g
		}
	}
	if total < j.GPUs || len(m.gens) == 1 {
		return nil, fmt.Sprintf("needs %d GPUs; the site has %d", j.GPUs, total)
	}
	return nil, fmt.Sprintf("needs %d GPUs; only a mix of generations holds it, and a job does not mix them: the largest, %s, has %d in %s",
		j.GPUs, big.name, big.gpus, count(len(big.doms), "failure domain"))
}

// lostPer is what one interruption costs a job, first order: half an
// interval of work on average, and the restart.
func lostPer(j Job) time.Duration { return j.Interval/2 + j.Restart }

// Place is job j over the failure domains named, with nodes nodes: the
// interruptions a month from those domains, from its GPUs and nodes and
// from the site; the first-order loss; ETTR at its interval.
func Place(j Job, r Rates, domains []string, nodes int) Placement {
	rate := 0.0
	for _, d := range domains {
		rate += r.Of(d)
	}
	return place(j, r, domains, rate, nodes)
}

// place is Place with the domains' rate summed.
func place(j Job, r Rates, domains []string, rate float64, nodes int) Placement {
	p := Placement{K: len(domains), Domains: domains}
	p.Interruptions.Domain = rate
	p.Interruptions.Node = r.GPU*float64(j.GPUs) + r.Node*float64(nodes)
	p.Interruptions.Site = r.Site
	p.Interruptions.Total = p.Interruptions.Domain + p.Interruptions.Node + p.Interruptions.Site
	p.LostMin = p.Interruptions.scale(lostPer(j).Minutes())
	p.GPUHours = p.LostMin.Total / 60 * float64(j.GPUs)
	mtbf := MTBF(p.Interruptions.Total)
	p.MTBFh = hours(mtbf)
	p.ETTR = ETTR(j.Interval, j.Write, j.Restart, mtbf)
	return p
}

// hours is d in hours, 0 for no interruptions (JSON has no infinity).
func hours(d time.Duration) float64 {
	if isInf(d) {
		return 0
	}
	return d.Hours()
}

// checkpoint compares the job's interval with the optimum at mtbf; nil
// with no interruptions (no interval is optimal: never checkpointing is).
func checkpoint(j Job, mtbf time.Duration) *Checkpoint {
	if isInf(mtbf) {
		return nil
	}
	young, daly, opt := Young(j.Write, mtbf)+j.Write, Daly(j.Write, mtbf)+j.Write, Optimum(j.Write, mtbf)+j.Write
	c := &Checkpoint{MTBFh: mtbf.Hours(), YoungMin: young.Minutes(), DalyMin: daly.Minutes(), OptimumMin: opt.Minutes(),
		ETTRFixed: ETTR(j.Interval, j.Write, j.Restart, mtbf), ETTRDaly: ETTR(daly, j.Write, j.Restart, mtbf),
		ETTROptimum: ETTR(opt, j.Write, j.Restart, mtbf), WriteBound: WriteBound(j.Write, mtbf)}
	c.CostGPUHours = max(0, c.ETTROptimum-c.ETTRFixed) * Month.Hours() * float64(j.GPUs)
	return c
}
