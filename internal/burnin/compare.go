package burnin

import (
	"fmt"
	"math"
	"sort"

	"github.com/seamdc/seam/internal/lifecycle"
)

// Worse is one figure of a node that got worse between two baselines
// (factory and site: shipping is a vibration test nobody asked for).
type Worse struct {
	Node   string  `json:"node"`
	Metric string  `json:"metric"`
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Limit  string  `json:"limit"`
}

func (w Worse) String() string {
	return fmt.Sprintf("%s: %s %.4g at the factory, %.4g on site (%s)", w.Node, w.Metric, w.Before, w.After, w.Limit)
}

// Tolerances are how much worse a metric may get before it is flagged:
// bandwidth and power by a share lower, temperatures by kelvin higher.
var Tolerances = map[string]struct {
	Lower bool
	Share float64 // of the factory's value
	Abs   float64
}{
	"nccl_allreduce_busbw_gbps": {Lower: true, Share: 0.05},
	MeasurePower:                {Lower: true, Share: 0.05},
	MeasureClock:                {Lower: true, Abs: 0.03},
	MeasureTemp:                 {Lower: false, Abs: 5},
	"gpu_count":                 {Lower: true, Abs: 0.5},
}

// Compare holds the site's baselines against the factory's, node by
// node, and lists every metric that got worse past its tolerance; a
// node whose tray serial changed is not compared (another tray), and
// says so; a node or metric missing on site is worse.
func Compare(factory, site []*lifecycle.Baseline) ([]Worse, []string) {
	by := map[string]*lifecycle.Baseline{}
	for _, b := range site {
		by[b.Node] = b
	}
	var out []Worse
	var notes []string
	for _, f := range factory {
		s := by[f.Node]
		switch {
		case s == nil:
			notes = append(notes, fmt.Sprintf("%s: a factory baseline but none on site: not burned in here yet", f.Node))
			continue
		case f.Serial != "" && s.Serial != "" && f.Serial != s.Serial:
			notes = append(notes, fmt.Sprintf("%s: factory tray %s, site tray %s: another tray, not compared", f.Node, f.Serial, s.Serial))
			continue
		}
		names := make([]string, 0, len(f.Metrics))
		for k := range f.Metrics {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, m := range names {
			tol, ok := Tolerances[m]
			if !ok {
				continue
			}
			before := f.Metrics[m]
			after, has := s.Metrics[m]
			if !has {
				out = append(out, Worse{Node: f.Node, Metric: m, Before: before, After: math.NaN(), Limit: "not measured on site"})
				continue
			}
			allow := math.Max(tol.Share*math.Abs(before), tol.Abs)
			switch {
			case tol.Lower && after < before-allow:
				out = append(out, Worse{Node: f.Node, Metric: m, Before: before, After: after, Limit: fmt.Sprintf("more than %.4g lower", allow)})
			case !tol.Lower && after > before+allow:
				out = append(out, Worse{Node: f.Node, Metric: m, Before: before, After: after, Limit: fmt.Sprintf("more than %.4g higher", allow)})
			}
		}
	}
	return out, notes
}
