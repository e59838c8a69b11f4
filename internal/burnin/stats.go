package burnin

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Measures burn-in compares across nodes, with the direction that is
// worse and the floor under the MAD: a cohort of identical nodes can
// have a MAD of 0 (18 healthy trays of a simulated rack, or a real one
// reporting integers), and without a floor the smallest difference
// would be a flag.
var Measures = map[string]Measure{
	MeasureBusBW:       {Name: MeasureBusBW, Unit: "GB/s", Lower: true, RelFloor: 0.01},
	MeasureTemp:        {Name: MeasureTemp, Unit: "°C", Lower: false, AbsFloor: 1},
	MeasurePower:       {Name: MeasurePower, Unit: "W", Lower: true, RelFloor: 0.02},
	MeasureClock:       {Name: MeasureClock, Unit: "", Lower: true, AbsFloor: 0.01},
	MeasureModuleBusBW: {Name: MeasureModuleBusBW, Unit: "GB/s", Lower: true, RelFloor: 0.01},
}

// Measure names.
const (
	MeasureBusBW = "busbw_gbps"     // all-reduce bus bandwidth at the fixed size
	MeasureTemp  = "gpu_temp_max_c" // the node's hottest GPU under load
	MeasurePower = "power_w"        // the node's GPUs' draw under load
	MeasureClock = "sm_clock_ratio" // the node's slowest GPU's SM clock over its maximum
	// MeasureModuleBusBW is busbw of a run across scale-up domains (over
	// the scale-out network), which has its own floor.
	MeasureModuleBusBW = "scaleout_busbw_gbps"
)

// Measure is how one measure is judged.
type Measure struct {
	Name, Unit string
	// Lower is true when a low value is the bad one (bandwidth).
	Lower bool
	// The MAD's floor: RelFloor of the cohort's median, or AbsFloor,
	// whichever is larger.
	RelFloor, AbsFloor float64
}

// K is the robust z-score past which a node is an outlier:
// (median − x)/(1.4826·MAD) > 3.5 (operate.md section E, after Iglewicz
// and Hoaglin's modified z-score).
const K = 3.5

// Observation is one node's value of a measure in one scope: a single
// node's own run, its pair's, its rack's (then the rack's value, for
// each member).
type Observation struct {
	Node    string
	Scope   string // ScopeSingle, ScopePair, ScopeRack, ScopeModule
	Ranks   int    // the run's GPUs: cohorts never mix rank counts
	SKU     string // the GPU's name: an H100 is never compared with an H200
	Measure string
	Value   float64
}

// Scopes of the ladder, smallest first.
const (
	ScopeSingle = "single"
	ScopePair   = "pair"
	ScopeRack   = "rack"
	ScopeModule = "module"
)

// Flag is one finding: node, measure, scope, value, the cohort's median
// and the threshold it crossed, and why (robust outlier, below the
// SKU's floor, above its ceiling).
type Flag struct {
	Node      string  `json:"node"`
	Measure   string  `json:"measure"`
	Scope     string  `json:"scope"`
	Ranks     int     `json:"ranks"`
	Value     float64 `json:"value"`
	Median    float64 `json:"median"`
	Threshold float64 `json:"threshold"`
	Why       string  `json:"why"`
}

func (f Flag) String() string {
	m := Measures[f.Measure]
	cmp := "below"
	if !m.Lower {
		cmp = "above"
	}
	return fmt.Sprintf("%s: %s %s %.4g%s at %d ranks, %s the threshold %.4g (cohort median %.4g): %s",
		f.Node, f.Scope, f.Measure, f.Value, unit(m), f.Ranks, cmp, f.Threshold, f.Median, f.Why)
}

func unit(m Measure) string {
	if m.Unit == "" {
		return ""
	}
	return " " + m.Unit
}

// Floors are absolute limits per SKU and measure, from cited figures:
// a cohort that is uniformly bad has a fine median and a small MAD, and
// only a floor catches it.
type Floors map[string]map[string]Limit

// Limit is an absolute bound: a value past it is flagged whatever the
// cohort does.
type Limit struct {
	Value  float64
	Scopes []string // the scopes it applies to (nil: all)
	Source string   // the figure it comes from
}

// DefaultFloors are 0.9 of the busbw the cited runs reached in one
// NVLink domain at ≥ 1 GB (operate.md section E), and GPU temperature
// ceilings:
//   - GB200 NVL72: 834.6 GB/s at 8 GB over a full rack (coreweave/nccl-tests PR #43);
//   - GB300: no public figure; GB200's is assumed (the same NVLink 5 fabric);
//   - H100 8-GPU: about 370 GB/s ring (NVIDIA/nccl-tests #212);
//   - H200 8-GPU: 475 GB/s (nccl-tests #272); B200 8-GPU: 830 (nccl #1807).
//
// The temperature ceiling is the simulated GB300's slowdown point (87
// °C, assumed: fleet.SlowdownC) less 2 K.
func DefaultFloors() Floors {
	nvl := []string{ScopeSingle, ScopePair, ScopeRack}
	bw := func(v float64, src string) Limit { return Limit{Value: 0.9 * v, Scopes: nvl, Source: src} }
	return Floors{
		"NVIDIA GB200": {MeasureBusBW: bw(834.6, "GB200 NVL72 8 GB all-reduce, coreweave/nccl-tests PR #43"),
			MeasureModuleBusBW: {Value: 0.9 * 381.48, Source: "GB200 20 racks over the scale-out network, 8 GB, coreweave/nccl-tests README"}},
		"NVIDIA GB300": {MeasureBusBW: bw(834.6, "assumed: GB200 NVL72's figure (no public GB300 run)"),
			MeasureModuleBusBW: {Value: 0.9 * 381.48, Source: "assumed: GB200's 20-rack scale-out figure, coreweave/nccl-tests README"},
			MeasureTemp:        {Value: 85, Source: "assumed: the simulated GB300's 87 °C slowdown less 2 K"}},
		"NVIDIA H100 80GB HBM3": {MeasureBusBW: bw(370, "H100 8-GPU ring, NVIDIA/nccl-tests #212")},
		"NVIDIA H200":           {MeasureBusBW: bw(475, "H200 8-GPU, NVIDIA/nccl-tests #272")},
		"NVIDIA B200":           {MeasureBusBW: bw(830, "B200 8-GPU, NVIDIA/nccl #1807")},
	}
}

type cohortKey struct {
	scope, sku, measure string
	ranks               int
}

// Cohort is one cohort's statistics.
type Cohort struct {
	Scope, SKU, Measure string
	Ranks, N            int
	Median, MAD, Sigma  float64 // Sigma = 1.4826·max(MAD, floor)
	Threshold           float64 // the robust threshold, before any SKU floor
}

// Analysis is what Analyze found.
type Analysis struct {
	Cohorts []Cohort
	Flags   []Flag
}

// Analyze groups observations by scope, rank count, SKU and measure,
// and flags every observation past its cohort's robust threshold
// (median ∓ K·1.4826·max(MAD, floor)) or past its SKU's absolute floor.
// Cohorts of fewer than 3 are judged by the floor alone. Observations
// of one node in one cohort (a node's two pairs) count once, at its
// best value: a node is only as guilty as its best run.
func Analyze(obs []Observation, floors Floors) Analysis {
	groups := map[cohortKey][]Observation{}
	for _, o := range obs {
		k := cohortKey{o.Scope, o.SKU, o.Measure, o.Ranks}
		groups[k] = append(groups[k], o)
	}
	keys := make([]cohortKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.scope != b.scope {
			return scopeRank(a.scope) < scopeRank(b.scope)
		}
		if a.measure != b.measure {
			return a.measure < b.measure
		}
		if a.sku != b.sku {
			return a.sku < b.sku
		}
		return a.ranks < b.ranks
	})
	var an Analysis
	vals := make([]float64, 0, 1024)
	for _, k := range keys {
		g := best(groups[k])
		m, ok := Measures[k.measure]
		if !ok {
			continue
		}
		vals = vals[:0]
		for _, o := range g {
			vals = append(vals, o.Value)
		}
		c := cohort(k, m, vals)
		an.Cohorts = append(an.Cohorts, c)
		lim, hasLim := floors[k.sku][k.measure]
		if hasLim && lim.Scopes != nil && !slices.Contains(lim.Scopes, k.scope) {
			hasLim = false
		}
		for _, o := range g {
			if f, bad := judge(o, m, c, lim, hasLim); bad {
				an.Flags = append(an.Flags, f)
			}
		}
	}
	sort.SliceStable(an.Flags, func(i, j int) bool { return an.Flags[i].Node < an.Flags[j].Node })
	return an
}

func scopeRank(s string) int {
	return slices.Index([]string{ScopeSingle, ScopePair, ScopeRack, ScopeModule}, s)
}

// best keeps one observation per node: its best value.
func best(g []Observation) []Observation {
	seen := make(map[string]int, len(g))
	out := g[:0:0]
	for _, o := range g {
		i, ok := seen[o.Node]
		if !ok {
			seen[o.Node] = len(out)
			out = append(out, o)
			continue
		}
		m := Measures[o.Measure]
		if (m.Lower && o.Value > out[i].Value) || (!m.Lower && o.Value < out[i].Value) {
			out[i] = o
		}
	}
	return out
}

func cohort(k cohortKey, m Measure, vals []float64) Cohort {
	c := Cohort{Scope: k.scope, SKU: k.sku, Measure: k.measure, Ranks: k.ranks, N: len(vals)}
	c.Median = median(vals)
	dev := make([]float64, len(vals))
	for i, v := range vals {
		dev[i] = math.Abs(v - c.Median)
	}
	c.MAD = median(dev)
	floor := math.Max(m.RelFloor*math.Abs(c.Median), m.AbsFloor)
	c.Sigma = 1.4826 * math.Max(c.MAD, floor)
	if m.Lower {
		c.Threshold = c.Median - K*c.Sigma
	} else {
		c.Threshold = c.Median + K*c.Sigma
	}
	return c
}

func judge(o Observation, m Measure, c Cohort, lim Limit, hasLim bool) (Flag, bool) {
	f := Flag{Node: o.Node, Measure: o.Measure, Scope: o.Scope, Ranks: o.Ranks, Value: o.Value, Median: c.Median}
	robust := c.N >= 3
	if m.Lower {
		if robust && o.Value < c.Threshold {
			f.Threshold, f.Why = c.Threshold, fmt.Sprintf("a robust outlier of %d: z = %.1f > %.1f", c.N, (c.Median-o.Value)/c.Sigma, K)
			return f, true
		}
		if hasLim && o.Value < lim.Value {
			f.Threshold, f.Why = lim.Value, "below the "+o.SKU+" floor ("+lim.Source+")"
			return f, true
		}
		return f, false
	}
	if robust && o.Value > c.Threshold {
		f.Threshold, f.Why = c.Threshold, fmt.Sprintf("a robust outlier of %d: z = %.1f > %.1f", c.N, (o.Value-c.Median)/c.Sigma, K)
		return f, true
	}
	if hasLim && o.Value > lim.Value {
		f.Threshold, f.Why = lim.Value, "above the "+o.SKU+" ceiling ("+lim.Source+")"
		return f, true
	}
	return f, false
}

// median of vals (sorted in place); NaN for none.
func median(vals []float64) float64 {
	n := len(vals)
	if n == 0 {
		return math.NaN()
	}
	slices.Sort(vals)
	if n%2 == 1 {
		return vals[n/2]
	}
	return (vals[n/2-1] + vals[n/2]) / 2
}
